/**
 * operator-framework's own bundle validators (the `olm-validate` toolchain, built from the Go
 * module proxy like the control plane): the CSV, CRD, bundle, OperatorHub, capabilities,
 * categories and good-practices suites, on an OLM bundle's files as `bundle` writes them.
 */
import type { BundleFile } from "../cli/olm_bundle.ts";
import { findBinaries, KUBERNETES_VERSION } from "./binaries.ts";

/** What the validators said: exit code 0 and no output is a clean bundle. */
export interface ValidationRun {
  /** The exit code. */
  code: number;
  /** What it printed on stdout. */
  stdout: string;
  /** What it printed on stderr. */
  stderr: string;
}

/** Validates the `bundle/` files of `files` for the control plane's Kubernetes version. */
export async function validateBundle(files: BundleFile[]): Promise<ValidationRun> {
  const { "olm-validate": validator } = await findBinaries({ names: ["olm-validate"] });
  const dir = await Deno.makeTempDir({ prefix: "olm-bundle-" });
  try {
    for (const file of files.filter((f) => f.path.startsWith("bundle/"))) {
      const path = `${dir}/${file.path}`;
      await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
      await Deno.writeTextFile(path, file.text);
    }
    const out = await new Deno.Command(validator, {
      args: ["-k8s-version", KUBERNETES_VERSION.replace(/^v(\d+\.\d+).*/, "$1"), `${dir}/bundle`],
    }).output();
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
