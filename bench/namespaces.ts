/**
 * `deno task bench:namespaces`: the real operator, as its ServiceAccount with the permissions of
 * `deno task start`, on the harness's control plane with N tenant namespaces (a Ptemplate in every
 * tenth, and some outside them), run three times for a while after its caches synced:
 *
 * 1. the N namespaces listed in WATCH_NAMESPACE, with a Role in each and nothing cluster-wide (a
 *    namespaced install across many tenants, as OLM's OperatorGroup makes it): one watch per
 *    kind and namespace, spread over connections of 64 watches;
 * 2. with the ClusterRole of deploy/ as well, all namespaces: one watch per kind;
 * 3. with it, the N listed: each kind watched once across all namespaces, filtered to the N.
 *
 * Prints one table and writes the same as JSON: informers, peak and last RSS, connections, and
 * how many were declared dead and replaced.
 *
 *   deno task bench:namespaces [--namespaces 300] [--seconds 60] [--out file.json]
 */
import { parseArgs } from "node:util";
import { KMM_MODULE_CRD_FILE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import { NAMESPACE } from "../kube/kinds.ts";
import type { Unstructured } from "../kube/object.ts";
import { builtInCatalog } from "../cli/plugin_loading/plugin_catalog.ts";
import { rbacManifests } from "../cli/manifests/rbac_manifests.ts";
import { ControlPlane } from "../testing/control_plane.ts";
import { installAllButDeployment, kustomize } from "../tests/fixtures/manifests.ts";
import { OperatorRun, permissionFlags, taskEnv } from "../tests/fixtures/operator_command.ts";
import { usage } from "../tests/fixtures/process_usage.ts";
import { sleep } from "../util/sleep.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    namespaces: { type: "string", default: "300" },
    seconds: { type: "string", default: "60" },
    out: { type: "string" },
  },
});
const TENANTS = Number(values.namespaces);
const SECONDS = Number(values.seconds);
if (!Number.isInteger(TENANTS) || TENANTS < 1) throw new Error("--namespaces must be 1 or more");
if (!(SECONDS > 0)) throw new Error("--seconds must be above 0");
const say = (line: string) => console.error(`bench: ${line}`);
/** One unlabelled sample of `name` in Prometheus text. */
const metric = (text: string, name: string) =>
  Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
const tenants = Array.from({ length: TENANTS }, (_, i) => `tenant-${i}`);
const OUTSIDE = ["outside-a", "outside-b"];

const plane = await ControlPlane.start({
  controllerManager: true,
  crds: [new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url), KMM_MODULE_CRD_FILE],
  progress: say,
});
const result: Record<string, unknown> = {
  command: `deno task bench:namespaces --namespaces ${TENANTS} --seconds ${SECONDS}`,
  date: new Date().toISOString(),
  deno: Deno.version.deno,
  v8Flags: permissionFlags("start").find((flag) => flag.startsWith("--v8-flags=")),
  env: taskEnv("start"),
  namespaces: TENANTS,
  secondsAfterSync: SECONDS,
};
try {
  const admin = plane.client();
  const identity = await plane.serviceAccountIdentity(
    "ptemplate-operator-system",
    "ptemplate-operator",
  );
  for (const name of [...tenants, ...OUTSIDE]) {
    await admin.create(NAMESPACE, { metadata: { name } });
  }
  // What `ptemplate-operator rbac --namespace …` prints for them: Roles only.
  const plugins = builtInCatalog().filter((e) => e.enabledByDefault).map((e) => e.plugin);
  await installAllButDeployment(admin, rbacManifests(plugins, { namespaces: tenants }));
  const withPtemplate = [...tenants.filter((_, i) => i % 10 === 0), ...OUTSIDE];
  for (const namespace of withPtemplate) {
    await admin.create(PTEMPLATE, {
      metadata: { name: "pt", namespace },
      spec: { selector: { pool: "none" } },
    } as Unstructured);
  }
  say(`${TENANTS} tenant namespaces, Ptemplates in ${withPtemplate.length} namespaces`);

  const run = async (scope: string, env: Record<string, string>) => {
    const operator = OperatorRun.start([
      "run",
      `--kubeconfig=${identity.kubeconfigPath}`,
      "--metrics-bind-address=127.0.0.1:0",
      "--health-probe-bind-address=0",
    ], { env });
    let peak = 0;
    let last = 0;
    let sampling = true;
    const sampler = usage(operator.child.pid, ({ rss }) => {
      if (rss) last = rss / 2 ** 20;
      peak = Math.max(peak, last);
      return sampling;
    }, 250);
    const started = performance.now();
    while (!operator.lines.some((l) => l.msg === "caches synced")) {
      if (performance.now() - started > 300_000) throw new Error(`${scope}: no sync in 5 min`);
      await sleep(100);
    }
    const syncSeconds = (performance.now() - started) / 1000;
    await sleep(SECONDS * 1000);
    const port = await operator.port("metrics");
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    sampling = false;
    await sampler;
    await operator.stop();
    // BENCH_LOG=prefix keeps each run's log (prefix-<scope>.jsonl).
    if (Deno.env.get("BENCH_LOG")) {
      await Deno.writeTextFile(
        `${Deno.env.get("BENCH_LOG")}-${scope.replace(/\W+/g, "-")}.jsonl`,
        operator.lines.map((l) => JSON.stringify(l)).join("\n") + "\n",
      );
    }
    const informers = operator.lines.find((l) => l.msg.startsWith("waiting for "))?.count;
    const across = operator.lines.find((l) => / watched across all namespaces /.test(l.msg));
    const row = {
      informers,
      watchedAcross: across?.across,
      syncSeconds: Math.round(syncSeconds * 10) / 10,
      peakRssMiB: Math.round(peak * 10) / 10,
      lastRssMiB: Math.round(last * 10) / 10,
      connections: metric(metrics, "rest_client_connections"),
      replacedMetric: metric(metrics, "rest_client_connections_replaced_total"),
      connectionsReplaced: operator.lines.filter((l) =>
        l.msg.startsWith("replacing the connection")
      ).length,
      watchesSilent: operator.lines.filter((l) => /^watch of .* silent/.test(l.msg)).length,
      errors: operator.lines.filter((l) => l.level === "error").length,
    };
    say(`${scope}: ${JSON.stringify(row)}`);
    return row;
  };

  const listed = { WATCH_NAMESPACE: tenants.join(",") };
  result.listedRolesOnly = await run(`${TENANTS} listed, Roles only`, listed);
  await installAllButDeployment(admin, await kustomize(plane.binaries.kubectl, "deploy"));
  result.allNamespaces = await run("all namespaces", {});
  result.listedAcross = await run(`${TENANTS} listed, allowed everywhere`, listed);
} finally {
  await plane.stop();
}

const rows = [
  [`${TENANTS} listed, Roles only: a watch per kind and namespace`, result.listedRolesOnly],
  ["all namespaces (ClusterRole)", result.allNamespaces],
  [`${TENANTS} listed, ClusterRole: a watch per kind across them`, result.listedAcross],
] as [string, Record<string, number>][];
console.log(
  "| scope | informers | sync s | peak RSS MiB | last RSS MiB | connections | replaced |\n" +
    "| --- | --- | --- | --- | --- | --- | --- |\n" +
    rows.map(([name, r]) =>
      `| ${name} | ${r.informers} | ${r.syncSeconds} | ${r.peakRssMiB} | ${r.lastRssMiB} | ` +
      `${r.connections} | ${r.connectionsReplaced} |`
    ).join("\n"),
);
const out = values.out ?? `bench/results/namespaces-${TENANTS}.json`;
await Deno.writeTextFile(out, JSON.stringify(result, null, 2) + "\n");
say(`wrote ${out}`);
