/**
 * Finds the control-plane binaries: `KUBEBUILDER_ASSETS`, else a per-user cache, else builds them
 * from the pinned Go modules in `testing/toolchain/` into that cache.
 */

import { readAsset } from "./asset.ts";

/** The pinned versions; the Go modules in `testing/toolchain/` must agree (a test checks). */
export const KUBERNETES_VERSION = "v1.36.3";
/** etcd's release (`go.etcd.io/etcd`). */
export const ETCD_VERSION = "v3.6.8";
/** kwok's release, which fakes nodes and the pods on them (`sigs.k8s.io/kwok`). */
export const KWOK_VERSION = "v0.8.0";
/** prometheus/client_golang's release, whose promlint lints our `/metrics`. */
export const PROMETHEUS_CLIENT_VERSION = "v1.20.5";
/** The Prometheus Go module's version (`v0.x` tags of prometheus/prometheus), for promtool. */
export const PROMETHEUS_VERSION = "v0.316.0";
/** operator-framework/api's release, whose validators check our OLM bundle. */
export const OPERATOR_FRAMEWORK_API_VERSION = "v0.45.0";
/** The OpenTelemetry Collector release (contrib and core `v0.x` modules; core `v1.x` ones pair with it). */
export const OTEL_COLLECTOR_VERSION = "v0.161.0";
/** What the seed's Go operator pins, and so the bench's controller-runtime peer. */
export const CONTROLLER_RUNTIME_PEER_VERSION = "v0.15.1";

/** What the control plane runs, and kubectl beside it: what `findBinaries` finds by default. */
export const CONTROL_PLANE_BINARIES = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
  "kubectl",
  "kwok",
] as const;
/** One of CONTROL_PLANE_BINARIES. */
export type ControlPlaneBinary = typeof CONTROL_PLANE_BINARIES[number];

/** The control plane's binaries, and tools some tests use (built only when asked for). */
export type BinaryName =
  | ControlPlaneBinary
  | "promlint"
  | "promtool"
  | "olm-validate"
  | "otelcol"
  | "controller-runtime-peer";

/** Paths of every binary the control plane may start. */
export type Binaries = Record<ControlPlaneBinary, string>;

/** A Go module under `testing/toolchain/` and the binaries built from it. */
export interface Toolchain {
  /** Folder under `testing/toolchain/`. */
  module: string;
  /** The version it builds; it names the cache folder, and the module's go.mod must agree. */
  version: string;
  /** Binary name → Go package that builds it. */
  packages: Partial<Record<BinaryName, string>>;
  /** Go linker flags (`-s -w` for smaller binaries, `-X` to stamp a version). */
  ldflags: string;
  /** Go build tags, comma-separated (they key the cache too). */
  tags?: string;
  /** The module's own Go files besides go.mod and go.sum (a `main.go`); a test keeps it true. */
  sources?: string[];
}

function kubeVersionFlags(): string {
  const [major, minor] = KUBERNETES_VERSION.slice(1).split(".");
  const values = {
    gitVersion: KUBERNETES_VERSION,
    gitMajor: major,
    gitMinor: minor,
    gitCommit: "0000000000000000000000000000000000000000",
    gitTreeState: "clean",
    buildDate: "1970-01-01T00:00:00Z",
  };
  // Without these, /version reports v0.0.0-master; both packages carry their own copy.
  return ["k8s.io/component-base/version", "k8s.io/client-go/pkg/version"]
    .flatMap((pkg) => Object.entries(values).map(([k, v]) => `-X ${pkg}.${k}=${v}`))
    .join(" ");
}

/** The Go modules the binaries are built from, each pinned. */
export const TOOLCHAINS: readonly Toolchain[] = [
  {
    module: "etcd",
    version: ETCD_VERSION,
    packages: { etcd: "go.etcd.io/etcd/server/v3" },
    ldflags: "-s -w",
  },
  {
    module: "kube",
    version: KUBERNETES_VERSION,
    packages: {
      "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
      "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
      "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
      // Not part of the control plane: for `kubectl kustomize` in tests and for people.
      kubectl: "k8s.io/kubernetes/cmd/kubectl",
    },
    ldflags: `-s -w ${kubeVersionFlags()}`,
  },
  {
    module: "kwok",
    version: KWOK_VERSION,
    packages: { kwok: "sigs.k8s.io/kwok/cmd/kwok" },
    ldflags: "-s -w",
  },
  {
    // Not part of the control plane: what `promtool check metrics` runs, to lint our /metrics.
    module: "promlint",
    version: PROMETHEUS_CLIENT_VERSION,
    packages: { promlint: "." },
    ldflags: "-s -w",
    sources: ["main.go"],
  },
  {
    // Not part of the control plane: promtool, to check and unit-test deploy/monitoring's rules
    // and evaluate its dashboard's queries. Without service discovery (`remove_all_sd`): the
    // commands used need none, and the cloud SDKs would double the build.
    module: "promtool",
    version: PROMETHEUS_VERSION,
    packages: { promtool: "github.com/prometheus/prometheus/cmd/promtool" },
    ldflags: `-s -w -X github.com/prometheus/common/version.Version=${PROMETHEUS_VERSION.slice(1)}`,
    tags: "remove_all_sd",
  },
  {
    // Not part of the control plane: operator-framework's bundle validators, for our OLM bundle.
    module: "olm_validate",
    version: OPERATOR_FRAMEWORK_API_VERSION,
    packages: { "olm-validate": "." },
    ldflags: "-s -w",
    sources: ["main.go"],
  },
  {
    // Not part of the control plane: an OpenTelemetry Collector that writes what it receives to a
    // file, for tests of the operator's traces (`testing/otel_collector.ts`).
    module: "otelcol",
    version: OTEL_COLLECTOR_VERSION,
    packages: { otelcol: "." },
    ldflags: "-s -w",
    sources: ["main.go"],
  },
  {
    // Not part of the control plane: a Ptemplate operator on controller-runtime, the peer that
    // bench:scale measures ours against (bench/README.md).
    module: "controller_runtime_peer",
    version: CONTROLLER_RUNTIME_PEER_VERSION,
    packages: { "controller-runtime-peer": "." },
    ldflags: "-s -w",
    sources: ["api_types.go", "controller.go", "deepcopy.go", "main.go"],
  },
];

const TOOLCHAIN_DIR = new URL("./toolchain/", import.meta.url);

/** The per-user cache: `$PTEMPLATE_CACHE_DIR`, else `$XDG_CACHE_HOME/ptemplate-operator`, else `~/.cache/…`. */
export function cacheDir(): string {
  const explicit = Deno.env.get("PTEMPLATE_CACHE_DIR");
  if (explicit) return explicit;
  const base = Deno.env.get("XDG_CACHE_HOME") ?? `${Deno.env.get("HOME") ?? "/tmp"}/.cache`;
  return `${base}/ptemplate-operator`;
}

function exists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** A toolchain module's files, by name: go.mod, go.sum and its own sources. */
async function moduleFiles(toolchain: Toolchain): Promise<[string, string][]> {
  const dir = new URL(`${toolchain.module}/`, TOOLCHAIN_DIR);
  const names = ["go.mod", "go.sum", ...[...toolchain.sources ?? []].sort()];
  return await Promise.all(
    names.map(async (name) => [name, await readAsset(new URL(name, dir))] as [string, string]),
  );
}

/** Where a toolchain's binaries live in the cache: keyed by version and its go.mod/go.sum. */
async function cacheFolder(toolchain: Toolchain): Promise<string> {
  // Our own Go sources (a module's main.go) count too, not only what it requires.
  const inputs = [
    ...(await moduleFiles(toolchain)).map(([, text]) => text),
    toolchain.ldflags,
    ...toolchain.tags ? [`tags ${toolchain.tags}`] : [],
  ].join("\0");
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(inputs));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${cacheDir()}/controlplane/${toolchain.module}-${toolchain.version}-${hex.slice(0, 12)}`;
}

/** Why the binaries cannot be had here; the message says what to install or set. */
export class BinariesUnavailable extends Error {
  /** Always `BinariesUnavailable`. */
  override readonly name = "BinariesUnavailable";
}

/** True when `go` can be run. */
export async function haveGo(): Promise<boolean> {
  try {
    const { success } = await new Deno.Command("go", {
      args: ["version"],
      stdout: "null",
      stderr: "null",
    })
      .output();
    return success;
  } catch {
    return false;
  }
}

/** Whether `findBinaries` may build what is missing, and where its progress goes. */
export interface FindOptions {
  /** Build what is missing (needs Go); when false, missing binaries throw BinariesUnavailable. */
  build?: boolean;
  /** Receives one line per build step and a heartbeat while a step runs. */
  progress?: (line: string) => void;
}

/**
 * The control-plane binaries, or the `names` asked for: from `KUBEBUILDER_ASSETS` when it has
 * them (setup-envtest's folder has etcd and kube-apiserver only), else from the cache, else built
 * into the cache. Only the toolchains of the binaries asked for are built: `deno task dev` does not
 * wait for the tools only tests use.
 */
export async function findBinaries<N extends BinaryName = ControlPlaneBinary>(
  options: FindOptions & { names?: readonly N[] } = {},
): Promise<Record<N, string>> {
  const progress = options.progress ?? ((line) => console.error(line));
  const assets = Deno.env.get("KUBEBUILDER_ASSETS");
  const wanted = new Set<BinaryName>(options.names ?? CONTROL_PLANE_BINARIES);
  const found: Partial<Record<BinaryName, string>> = {};
  for (const toolchain of TOOLCHAINS) {
    const names = (Object.keys(toolchain.packages) as BinaryName[]).filter((n) => wanted.has(n));
    if (!names.length) continue;
    const folder = await cacheFolder(toolchain);
    const missing: BinaryName[] = [];
    for (const name of names) {
      if (assets && exists(`${assets}/${name}`)) found[name] = `${assets}/${name}`;
      else if (exists(`${folder}/${name}`)) found[name] = `${folder}/${name}`;
      else missing.push(name);
    }
    if (missing.length === 0) continue;
    if (options.build === false) {
      throw new BinariesUnavailable(
        `no ${missing.join(", ")} in ${assets ? `KUBEBUILDER_ASSETS (${assets}) or ` : ""}` +
          `the cache (${folder}); run \`deno task cluster\` once to build them (needs Go), ` +
          `or set KUBEBUILDER_ASSETS to a folder that has them`,
      );
    }
    if (!(await haveGo())) {
      throw new BinariesUnavailable(
        `no ${missing.join(", ")} found and no Go toolchain to build them: install Go ≥ 1.26 ` +
          `(https://go.dev/dl), or set KUBEBUILDER_ASSETS to a folder with the binaries`,
      );
    }
    await withBuildLock(folder, progress, async () => {
      // Built by someone else while we waited for the lock: nothing left to do.
      if (missing.every((name) => exists(`${folder}/${name}`))) return;
      await build(toolchain, folder, progress);
    });
    for (const name of missing) found[name] = `${folder}/${name}`;
  }
  return found as Record<N, string>;
}

/**
 * Runs `work` holding an exclusive lock on `<folder>.lock`: one build of a toolchain at a time on
 * the machine. Test files running in parallel are workers of one process (one pid), and several
 * processes may share the cache; all of them find the first missing binary at once on a cold
 * machine. The lock is `flock`'s, so a builder that dies releases it.
 */
export async function withBuildLock(
  folder: string,
  progress: (line: string) => void,
  work: () => Promise<void>,
): Promise<void> {
  await Deno.mkdir(folder.slice(0, folder.lastIndexOf("/")), { recursive: true });
  const lock = await Deno.open(`${folder}.lock`, { create: true, write: true });
  try {
    if (!(await lock.tryLock(true))) {
      progress(`control plane: waiting for another build of ${folder} …`);
      await lock.lock(true);
    }
    await work();
  } finally {
    lock.close();
  }
}

/** Builds one toolchain module into a temporary folder, then renames it into the cache. */
async function build(
  toolchain: Toolchain,
  folder: string,
  progress: (line: string) => void,
): Promise<void> {
  const names = Object.keys(toolchain.packages);
  const staging = `${folder}.tmp-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
  await Deno.mkdir(staging, { recursive: true });
  // A harness imported from a release URL builds from a copy of the module's files.
  const local = TOOLCHAIN_DIR.protocol === "file:";
  const moduleDir = local
    ? new URL(`${toolchain.module}/`, TOOLCHAIN_DIR).pathname
    : `${staging}.src`;
  if (!local) {
    await Deno.mkdir(moduleDir, { recursive: true });
    for (const [name, text] of await moduleFiles(toolchain)) {
      await Deno.writeTextFile(`${moduleDir}/${name}`, text);
    }
  }
  const env = { GOTOOLCHAIN: "local", CGO_ENABLED: "0", GOFLAGS: "-mod=readonly" };
  const started = Date.now();
  try {
    await step(
      progress,
      `${toolchain.module} ${toolchain.version}: downloading Go modules`,
      "go",
      ["mod", "download"],
      moduleDir,
      env,
    );
    await step(
      progress,
      `${toolchain.module} ${toolchain.version}: compiling ${names.join(", ")}`,
      "go",
      [
        "build",
        "-v",
        "-trimpath",
        "-ldflags",
        toolchain.ldflags,
        ...toolchain.tags ? ["-tags", toolchain.tags] : [],
        "-o",
        `${staging}/`,
        ...Object.values(toolchain.packages),
      ],
      moduleDir,
      env,
    );
    for (const [name, pkg] of Object.entries(toolchain.packages)) {
      // `go build -o dir/` names a binary after its package path, minus a /vN suffix; the
      // module's own package (".") after the module's path.
      const path = pkg === "." ? `toolchain/${toolchain.module}` : pkg;
      const built = path.split("/").filter((part) => !/^v\d+$/.test(part)).pop()!;
      if (built !== name) await Deno.rename(`${staging}/${built}`, `${staging}/${name}`);
      if (!exists(`${staging}/${name}`)) {
        throw new Error(`go build produced no ${name} in ${staging}`);
      }
    }
    await Deno.remove(folder, { recursive: true }).catch(() => {});
    await Deno.rename(staging, folder);
    progress(
      `control plane: built ${names.join(", ")} in ${
        ((Date.now() - started) / 1000).toFixed(0)
      } s → ${folder}`,
    );
  } catch (error) {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    throw error;
  } finally {
    if (!local) await Deno.remove(moduleDir, { recursive: true }).catch(() => {});
  }
}

/**
 * Runs one build step, printing a start line and a heartbeat every 30 s (with the number of
 * packages `go build -v` has compiled) so a slow cold build is visibly alive.
 */
async function step(
  progress: (line: string) => void,
  title: string,
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<void> {
  const started = Date.now();
  progress(`control plane: ${title} …`);
  const child = new Deno.Command(command, { args, cwd, env, stdout: "piped", stderr: "piped" })
    .spawn();
  let lines = 0;
  let tail: string[] = [];
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      const parts = chunk.split("\n").filter(Boolean);
      lines += parts.length;
      tail = [...tail, ...parts].slice(-30);
    }
  };
  const heartbeat = setInterval(() => {
    const elapsed = ((Date.now() - started) / 1000).toFixed(0);
    progress(`control plane:   … ${title}: ${elapsed} s, ${lines} packages so far`);
  }, 30_000);
  try {
    const [status] = await Promise.all([
      child.status,
      collect(child.stdout),
      collect(child.stderr),
    ]);
    if (!status.success) {
      throw new Error(
        `\`${command} ${args.join(" ")}\` failed in ${cwd} (exit ${status.code}):\n${
          tail.join("\n")
        }`,
      );
    }
  } finally {
    clearInterval(heartbeat);
  }
}
