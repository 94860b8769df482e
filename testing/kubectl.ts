/**
 * kubectl in tests, as a person runs it: `kubectl kustomize` of a deploy folder, parsed, and any
 * other command against a control plane's kubeconfig (the binary comes with the control plane's).
 */
import { parseAllDocuments } from "yaml";
import type { Unstructured } from "../kube/object.ts";

/** What a kubectl run printed, and how it ended. */
export interface KubectlRun {
  /** The exit code. */
  code: number;
  /** What it printed on stdout. */
  stdout: string;
  /** What it printed on stderr. */
  stderr: string;
}

/**
 * `kubectl [--kubeconfig K] <args>` in `cwd`; throws with kubectl's words when it fails. Its
 * discovery cache is kept beside the kubeconfig: control planes in tests reuse ports, and a cache
 * left by another one would answer for this one.
 */
export async function kubectlRun(
  binary: string,
  args: string[],
  options: { kubeconfig?: string; cwd?: string } = {},
): Promise<KubectlRun> {
  const { kubeconfig, cwd } = options;
  const out = await new Deno.Command(binary, {
    args: [...kubeconfig ? ["--kubeconfig", kubeconfig] : [], ...args],
    cwd,
    env: kubeconfig
      ? { KUBECACHEDIR: `${kubeconfig.slice(0, kubeconfig.lastIndexOf("/"))}/kubectl-cache` }
      : {},
    stdin: "null",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  const run = { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
  if (run.code !== 0) {
    throw new Error(`kubectl ${args.join(" ")} exited ${run.code}: ${run.stderr}`);
  }
  return run;
}

/** `kubectl kustomize <folder>`, one object per document. */
export async function kustomize(binary: string, folder: string | URL): Promise<Unstructured[]> {
  const path = folder instanceof URL ? folder.pathname : folder;
  const { stdout } = await kubectlRun(binary, ["kustomize", path]);
  return parseAllDocuments(stdout).map((d) => d.toJS() as Unstructured);
}
