import { expect } from "expect";
import {
  CONTROLLER_RUNTIME_PEER_VERSION,
  ETCD_VERSION,
  KUBERNETES_VERSION,
  KWOK_VERSION,
  OPERATOR_FRAMEWORK_API_VERSION,
  OTEL_COLLECTOR_VERSION,
  PROMETHEUS_CLIENT_VERSION,
  PROMETHEUS_VERSION,
  TOOLCHAINS,
  withBuildLock,
} from "./binaries.ts";

const goMod = (module: string) =>
  Deno.readTextFileSync(new URL(`./toolchain/${module}/go.mod`, import.meta.url));

Deno.test("the Go toolchain modules pin the versions the harness reports", () => {
  expect(goMod("kube")).toMatch(new RegExp(`k8s\\.io/kubernetes ${KUBERNETES_VERSION}\\b`));
  expect(goMod("etcd")).toMatch(new RegExp(`go\\.etcd\\.io/etcd/server/v3 ${ETCD_VERSION}\\b`));
  expect(goMod("kwok")).toMatch(new RegExp(`sigs\\.k8s\\.io/kwok ${KWOK_VERSION}\\b`));
  expect(goMod("promlint")).toMatch(
    new RegExp(`github\\.com/prometheus/client_golang ${PROMETHEUS_CLIENT_VERSION}\\b`),
  );
  expect(goMod("promtool")).toMatch(
    new RegExp(`github\\.com/prometheus/prometheus ${PROMETHEUS_VERSION}\\b`),
  );
  expect(goMod("olm_validate")).toMatch(
    new RegExp(`github\\.com/operator-framework/api ${OPERATOR_FRAMEWORK_API_VERSION}\\b`),
  );
  // Every collector module at one release: contrib and core's v0.x modules carry its number, core's
  // v1.x modules the one stable number of that release; mixing releases breaks the build.
  const collector = [...goMod("otelcol").matchAll(/^\s+\S*opentelemetry\S*collector\S* (v\S+)/gm)]
    .map(([, version]) => version);
  expect(collector.filter((v) => v.startsWith("v0.")).length).toBeGreaterThanOrEqual(10);
  expect(new Set(collector.filter((v) => v.startsWith("v0.")))).toEqual(
    new Set([OTEL_COLLECTOR_VERSION]),
  );
  expect(new Set(collector.filter((v) => v.startsWith("v1."))).size).toBe(1);
  expect(goMod("controller_runtime_peer")).toMatch(
    new RegExp(`sigs\\.k8s\\.io/controller-runtime ${CONTROLLER_RUNTIME_PEER_VERSION}\\b`),
  );
  // Every staging module must point at the matching published version, or the build mixes them.
  const staging = KUBERNETES_VERSION.replace(/^v1\./, "v0.");
  const replaces = [...goMod("kube").matchAll(/^\s+(k8s\.io\/\S+) => \S+ (\S+)$/gm)];
  expect(replaces.length).toBeGreaterThanOrEqual(30);
  for (const [, , version] of replaces) expect(version).toBe(staging);
});

Deno.test("each toolchain lists its own Go sources: they key the cache and are copied to build", async () => {
  for (const toolchain of TOOLCHAINS) {
    const onDisk: string[] = [];
    for await (
      const entry of Deno.readDir(new URL(`./toolchain/${toolchain.module}/`, import.meta.url))
    ) {
      if (entry.isFile && entry.name.endsWith(".go")) onDisk.push(entry.name);
    }
    expect({ module: toolchain.module, sources: [...toolchain.sources ?? []].sort() }).toEqual({
      module: toolchain.module,
      sources: onDisk.sort(),
    });
  }
});

Deno.test("builds of one toolchain take turns: parallel test files share one process and its cache", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const folder = `${dir}/kube-v0-abc`;
    let inside = 0;
    let most = 0;
    const waited: string[] = [];
    const built: string[] = [];
    // Three callers that all found the binary missing, as three test files on a cold machine.
    await Promise.all(
      ["a", "b", "c"].map((who) =>
        withBuildLock(folder, (line) => waited.push(line), async () => {
          inside++;
          most = Math.max(most, inside);
          if (built.length === 0) {
            await new Promise((resolve) => setTimeout(resolve, 50));
            built.push(who);
          }
          inside--;
        })
      ),
    );
    expect(most).toBe(1);
    expect(built.length).toBe(1);
    expect(waited.length).toBe(2);
    expect(waited[0]).toContain("waiting for another build");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
