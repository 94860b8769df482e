/**
 * Plugins that cannot take the operator down, on the user's path: `ptemplate-operator run --plugin` loads a
 * `.ts` file from a folder outside the repository and a pinned `deno bundle` of another; one
 * plugin spins 60 s and one allocates without bound, each in a Worker in a process of its own (a
 * plugin host), and one never settles in-process (tests/fixtures/chores.ts). The leader keeps its lease (the standby never
 * takes over), its probes say 200, every other Chore converges for every plugin, the runaway keys
 * are retried with backoff and quarantined (Event, condition), the timeout metric counts them, and
 * the audit log shows no write by the plugin for a key after its deadline. The spinner's hosts are
 * gone after their deadlines and no thread of the operator or its hosts spins on. Then what must be
 * refused at start is: a tampered pin (naming both digests), a file others may write, an
 * incompatible plugin API, a bundle that carries its own runtime.
 */
import { expect } from "expect";
import { CONFIG_MAP, EVENT, NAMESPACE } from "../mod.ts";
import { LEASE } from "../kube/mod.ts";
import type { Unstructured } from "../kube/mod.ts";
import { type AuditEvent, WRITE_VERBS } from "../testing/audit_log.ts";
import { busiestThread, childProcesses, processTable, threadCpuTicks } from "../testing/process.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { frameOf, readFrames } from "../runtime/mod.ts";
import { PLUGIN_HOST_COMMAND } from "../cli/plugin_loading/plugin_isolation.ts";
import { sleep } from "../util/sleep.ts";
import { CHORE, CHORE_CRD } from "./fixtures/chores.ts";
import { type LogLine, OperatorRun, spawnOperator } from "./fixtures/operator_command.ts";

const NS = "chores";
const TIMEOUT_S = 4;
/** Each misbehaving plugin and the Chore it misbehaves on. */
const RUNAWAY = [["spinner", "spin"], ["hoarder", "hog"], ["sleeper", "hang"]];
const LEASE_NAME = "chores";
const CALM = ["calm-1", "calm-2", "calm-3"];
const repo = new URL("../", import.meta.url);

async function run(args: string[], cwd?: string) {
  const out = await new Deno.Command(Deno.execPath(), { args, cwd, stdin: "null" }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

/** The field manager a write names, if any. */
function managerOf(event: AuditEvent): string | undefined {
  return new URL(event.requestURI, "http://x").searchParams.get("fieldManager") ?? undefined;
}

async function sha256(path: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** `ptemplate-operator run` with these flags: its exit code and last lines, once it gave up. */
async function refused(kubeconfig: string, ...flags: string[]) {
  const child = spawnOperator(["run", `--kubeconfig=${kubeconfig}`, ...flags]);
  const [status, stderr] = await Promise.all([
    child.status,
    new Response(child.stderr).text(),
    child.stdout.cancel(),
  ]);
  return { code: status.code, stderr };
}

await integrationTest("plugins that spin, hoard or hang cannot take the operator down", {
  crds: [CHORE_CRD],
  audit: true,
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: NS } });
  // A folder outside the repository, as a user's plugin lives.
  const outside = await Deno.makeTempDir({ prefix: "chores-plugin-" });
  await Deno.chmod(outside, 0o755);
  await Deno.copyFile(new URL("tests/fixtures/chores.ts", repo), `${outside}/chores.ts`);
  await Deno.chmod(`${outside}/chores.ts`, 0o644);
  const bundled = await run([
    "bundle",
    "--external",
    "ptemplate-operator/*",
    "-o",
    `${outside}/hoarder.js`,
    new URL("tests/fixtures/hoarder_plugin.ts", repo).pathname,
  ]);
  expect(bundled).toMatchObject({ code: 0 });
  await Deno.chmod(`${outside}/hoarder.js`, 0o644);
  const pin = await sha256(`${outside}/hoarder.js`);
  const flags = [
    `--kubeconfig=${plane.adminKubeconfigPath}`,
    "--leader-elect",
    "--leader-election-namespace=default",
    `--leader-election-id=${LEASE_NAME}`,
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
    "--webhook-bind-address=0",
    `--reconcile-timeout=${TIMEOUT_S}`,
    "--plugin-heap-limit=64",
    `--plugin=${outside}/chores.ts`,
    `--plugin=${outside}/hoarder.js#sha256=${pin}`,
  ];
  const said = (lines: LogLine[], pattern: RegExp) => lines.find((l) => pattern.test(l.msg));
  const leader = OperatorRun.start(["run", ...flags]);
  let standby: OperatorRun | undefined;
  /** Every plugin host the leader ran, by PID. */
  const allHosts = new Set<number>();
  try {
    await step("both load the plugins; the first leads, the second stands by", async () => {
      await eventually(() => expect(said(leader.lines, /^became leader/)).toBeDefined(), {
        timeoutMs: 60_000,
      });
      standby = OperatorRun.start(["run", ...flags]);
      await eventually(() => expect(said(standby!.lines, /^campaigning/)).toBeDefined(), {
        timeoutMs: 60_000,
      });
      const workers = leader.lines.filter((l) => /runs in a Worker in a process/.test(l.msg));
      expect(workers.map((l) => l.plugin).sort()).toEqual(["hoarder", "spinner"]);
    });

    const lease = await admin.get(LEASE, LEASE_NAME, { namespace: "default" });
    const holder = lease.spec?.holderIdentity;
    const transitions = lease.spec?.leaseTransitions ?? 0;
    const probes = await leader.port("probes");
    const metrics = await leader.port("metrics");
    const probeFailures: string[] = [];
    /** The plugin hosts of the leader (their last argument names their plugin), by PID. */
    const hostsOf = async () =>
      (await childProcesses(leader.child.pid)).filter((p) => /plugin[-_]host/.test(p.command));
    const spinnerHosts = new Set<number>();
    let probing = true;
    const prober = (async () => {
      while (probing) {
        for (const host of await hostsOf()) {
          allHosts.add(host.pid);
          if (host.command.endsWith(" spinner")) spinnerHosts.add(host.pid);
        }
        for (const path of ["/healthz", "/readyz"]) {
          const response = await fetch(`http://127.0.0.1:${probes}${path}`).catch((e) => e);
          if (!(response instanceof Response) || response.status !== 200) {
            probeFailures.push(`${path} ${response.status ?? response}`);
          }
          if (response instanceof Response) await response.body?.cancel();
        }
        await sleep(1_000);
      }
    })();
    for (const name of ["spin", "hog", "hang", ...CALM]) {
      await admin.create(CHORE, { metadata: { name, namespace: NS }, spec: {} });
    }
    const timeouts = async () => {
      const text = await (await fetch(`http://127.0.0.1:${metrics}/metrics`)).text();
      return Object.fromEntries(
        [...text.matchAll(
          /^controller_runtime_reconcile_timeouts_total\{controller="([^"]+)"\} (\d+)/gm,
        )].map(([, c, n]) => [c, Number(n)]),
      );
    };

    await step(
      "every other Chore converges for every plugin while the three run away",
      async () => {
        await eventually(async () => {
          const names = (await admin.list(CONFIG_MAP, { namespace: NS })).items
            .map((cm) => cm.metadata?.name);
          for (const chore of CALM) {
            for (const by of ["spinner", "hoarder", "sleeper"]) {
              expect(names).toContain(`${chore}-${by}`);
            }
          }
          // Each plugin also serves the runaway keys of the others.
          expect(names).toEqual(expect.arrayContaining(["spin-hoarder", "spin-sleeper"]));
          expect(names).toEqual(expect.arrayContaining(["hog-spinner", "hang-spinner"]));
        }, { timeoutMs: 60_000 });
      },
    );

    await step("each runaway key is retried with backoff, then quarantined", async () => {
      await eventually(async () => {
        const events = (await admin.list(EVENT, { namespace: NS })).items
          .filter((e) => e.reason === "ReconcileQuarantined");
        expect(events.map((e) => e.involvedObject?.name).sort()).toEqual(["hang", "hog", "spin"]);
      }, { timeoutMs: 120_000 });
      // Three timeouts each, then no more: the key is put aside until the Chore changes.
      expect(await timeouts()).toMatchObject({ spinner: 3, hoarder: 3, sleeper: 3 });
      // Each failed visit is told (one aggregated Event) and retried with the queue's per-key
      // backoff: three timeouts, then none (above).
      const failures = (await admin.list(EVENT, { namespace: NS })).items
        .filter((e) => e.reason === "ReconcileError" && e.involvedObject?.name === "spin");
      expect(failures.map((e) => e.message)).toEqual([
        expect.stringMatching(/did not finish within its deadline of 4 s/),
      ]);
      const spin = await admin.get(CHORE, "spin", { namespace: NS }) as Unstructured;
      const conditions = (spin.status as { conditions?: { type: string }[] }).conditions ?? [];
      expect(conditions.map((c) => c.type)).toContain("ReconcileQuarantined");
    });

    await step("the spinner's hosts are gone after their deadlines; nothing spins on", async () => {
      // Three timeouts, each ended a host (a Worker's thread would have spun on, 60 s each).
      expect(spinnerHosts.size).toBeGreaterThanOrEqual(3);
      const live = new Set((await hostsOf()).map((h) => h.pid));
      // A new host may serve the spinner's calm keys; the ones that spun are gone.
      expect([...spinnerHosts].filter((pid) => live.has(pid)).length).toBeLessThanOrEqual(1);
      // Over 2 s a spinning thread gains ~200 ticks; none of the leader's or its hosts' may gain
      // half of that.
      const pids = [leader.child.pid, ...live];
      const before = await Promise.all(pids.map(threadCpuTicks));
      await sleep(2_000);
      const after = await Promise.all(pids.map(threadCpuTicks));
      expect(pids.map((_, i) => busiestThread(before[i], after[i])).filter((t) => t >= 100))
        .toEqual([]);
    });

    await step("a spec edit releases a quarantined key; it runs away again", async () => {
      await admin.patch(CHORE, "hog", { spec: { note: "edited" } }, { namespace: NS });
      await eventually(async () => expect((await timeouts()).hoarder).toBeGreaterThan(3), {
        timeoutMs: 60_000,
      });
    });

    await step("the lease stayed with the leader; its probes said 200 throughout", async () => {
      probing = false;
      await prober;
      const now = await admin.get(LEASE, LEASE_NAME, { namespace: "default" });
      expect({ holder: now.spec?.holderIdentity, transitions: now.spec?.leaseTransitions ?? 0 })
        .toEqual({ holder, transitions });
      expect(said(standby!.lines, /^became leader/)).toBeUndefined();
      expect(probeFailures).toEqual([]);
    });

    await step("the audit log: no write by a plugin for a key after its deadline", async () => {
      const audit = await plane.auditEvents();
      const at = (e: AuditEvent) => Date.parse(e.requestReceivedTimestamp);
      const late = RUNAWAY.flatMap(([plugin, key]) => {
        const made = audit.find((e) =>
          e.verb === "create" && e.objectRef?.resource === "chores" && e.objectRef.name === key
        )!;
        // Its first visit starts when the cache sees it, after its creation: so no earlier.
        const deadline = at(made) + TIMEOUT_S * 1000;
        return audit.filter((e) =>
          WRITE_VERBS.has(e.verb) && at(e) > deadline &&
          managerOf(e)?.split("/").at(-1) === plugin &&
          (e.objectRef?.name === key || e.objectRef?.name?.startsWith(`${key}-`))
        );
      });
      expect(late.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
      // The hanging reconcile's write after its deadline never reached the API server.
      expect(audit.filter((e) => e.objectRef?.name === "hang-late")).toEqual([]);
    });
  } finally {
    await Promise.all([leader.stop(), standby?.stop()]);
  }

  await step("no plugin host outlives the operator that stopped", async () => {
    expect(allHosts.size).toBeGreaterThan(0);
    const alive = (await processTable()).filter((p) => !p.state.startsWith("Z")).map((p) => p.pid);
    expect([...allHosts].filter((pid) => alive.includes(pid))).toEqual([]);
  });

  await step("refused at start, each naming the fix", async () => {
    const kubeconfig = plane.adminKubeconfigPath;
    const writable = await Deno.makeTempDir({ prefix: "chores-writable-" });
    await Deno.chmod(writable, 0o755);
    await Deno.copyFile(`${outside}/chores.ts`, `${writable}/chores.ts`);
    await Deno.chmod(`${writable}/chores.ts`, 0o666);
    await Deno.writeTextFile(
      `${outside}/future.ts`,
      (await Deno.readTextFile(`${outside}/chores.ts`))
        .replace('name: "spinner",', 'name: "spinner",\n  pluginApi: "9.0",'),
    );
    await Deno.chmod(`${outside}/future.ts`, 0o644);
    const own = await run([
      "bundle",
      "-o",
      `${outside}/selfish.js`,
      new URL("tests/fixtures/hoarder_plugin.ts", repo).pathname,
    ], repo.pathname);
    expect(own).toMatchObject({ code: 0 });
    await Deno.chmod(`${outside}/selfish.js`, 0o644);
    const wrong = "0".repeat(64);
    const [tampered, others, future, selfish] = await Promise.all([
      refused(kubeconfig, `--plugin=${outside}/hoarder.js#sha256=${wrong}`),
      refused(kubeconfig, `--plugin=${writable}/chores.ts`),
      refused(kubeconfig, `--plugin=${outside}/future.ts`),
      refused(kubeconfig, `--plugin=${outside}/selfish.js`),
    ]);
    await Deno.remove(writable, { recursive: true });
    expect(tampered.code).not.toBe(0);
    expect(tampered.stderr).toContain(`pinned sha256=${wrong}`);
    expect(tampered.stderr).toContain(`has sha256=${pin}`);
    expect(others.code).not.toBe(0);
    expect(others.stderr).toMatch(/refused: .*chores\.ts.*writ/);
    expect(future.code).not.toBe(0);
    expect(future.stderr).toMatch(/9\.0/);
    expect(selfish.code).not.toBe(0);
    expect(selfish.stderr).toContain("--external 'ptemplate-operator/*'");
  });
  await Deno.remove(outside, { recursive: true });
});

Deno.test("the operator's executable is a plugin host (what a compiled binary runs): it relays a Worker and ends with its stdin", async () => {
  // The compiled binary, when the release job names one (spawnOperator).
  const host = spawnOperator([PLUGIN_HOST_COMMAND, "spinner"], { stdin: "piped" });
  const input = host.stdin.getWriter();
  await input.write(frameOf({
    type: "start",
    source: {
      url: new URL("../runtime/isolation/testdata/worker_plugins.ts", import.meta.url).href,
      exportName: "spinner",
      name: "spinner",
      heapLimitMb: 64,
    },
  }));
  const frames = readFrames(host.stdout);
  expect((await frames.next()).value).toEqual({ type: "ready" });
  const object = { metadata: { name: "ok", namespace: "ns", uid: "ok", resourceVersion: "1" } };
  await input.write(frameOf({ type: "call", id: 7, call: "reconcile", args: [object] }));
  expect((await frames.next()).value).toEqual({
    type: "result",
    id: 7,
    value: { requeueAfterMs: 1 },
  });
  await input.close();
  expect((await frames.next()).done).toBe(true);
  expect((await host.status).code).toBe(0);
  await host.stderr.cancel();
});
