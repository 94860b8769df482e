/**
 * Every path a person walks, from a fresh clone, the way they walk it: every task `deno task`
 * lists, every subcommand of the binary (main.ts with the binary's permissions), and the guides'
 * commands as written (tests/fixtures/documented_commands.ts), checking what each prints and
 * writes. Long-running ones (`cluster`, `start`, `dev`) are started in a process group of their
 * own and stopped with Ctrl-C (SIGINT to the group, as a terminal sends it). One control plane,
 * `deno task cluster --nodes 2`'s, serves everything that needs a cluster; `dev` and
 * `bench:scale` start their own because that is what they are.
 */
import { expect } from "expect";
import { parseAllDocuments } from "yaml";
import type { Binaries } from "../testing/binaries.ts";
import { eventually } from "../testing/eventually.ts";
import { binariesTest } from "../testing/integration_test_case.ts";
import { liveGroupMembers } from "../testing/process.ts";
import {
  type CommandResult,
  runDocumented,
  type Running,
  runPrinted,
  startCommand,
  startDocumented,
} from "./fixtures/documented_commands.ts";
import { CpuLimit } from "../bench/cpu_limit.ts";
import { freshClone } from "./fixtures/fresh_clone.ts";
import { kubectl } from "./fixtures/kubectl.ts";
import { permissionFlags } from "./fixtures/operator_command.ts";

const TASKS = [
  "test",
  "test:unit",
  "check",
  "fmt",
  "lint",
  "crds",
  "docs",
  "cluster",
  "dev",
  "start",
  "compile",
  "bundle",
  "new",
  "bench",
  "bench:scale",
  "bench:backlog",
  "bench:latency",
  "bench:isolation",
  "bench:http-memory",
  "bench:namespaces",
  "bench:tracing",
  "bench:memory-floor",
  "bench:request-cost",
];

/** Runs a command in the clone that is not in the guides (a task with flags, a subcommand). */
async function inClone(clone: string, words: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: words,
    cwd: clone,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

const ok = (result: CommandResult) => {
  expect({ code: result.code, stderr: result.code ? result.stderr : "" }).toEqual({
    code: 0,
    stderr: "",
  });
  return result;
};

/** Waits until `running` has printed what `pattern` matches (minutes, on a busy machine). */
async function printed(running: Running, pattern: RegExp, timeoutMs = 240_000) {
  return await eventually(() => {
    const match = running.output().match(pattern);
    if (!match) throw new Error(`not printed yet (${pattern}):\n${running.output().slice(-3000)}`);
    return match;
  }, { timeoutMs, intervalMs: 250 });
}

/** Ctrl-C, then the exit status; never leaves the process behind. */
async function interrupt(running: Running): Promise<Deno.CommandStatus> {
  running.interrupt();
  return await running.exited();
}

async function alive(pids: number[]): Promise<number[]> {
  return (await Promise.all(pids.map(liveGroupMembers))).flat();
}

/** Whether this user may make a CPU-limited cgroup (bench:scale --cpu-limit): made and removed. */
async function cgroupsWritable(): Promise<boolean> {
  try {
    await (await CpuLimit.create(`ptemplate-test-${Deno.pid}`, 0.5)).remove();
    return true;
  } catch {
    return false;
  }
}

/** The cgroups bench:scale --cpu-limit makes (`ptemplate-bench-<pid>-<replica>`) that exist now. */
const benchCgroups = () => CpuLimit.named("ptemplate-bench-");

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

await binariesTest(
  "user paths: every task, subcommand and guide command, from a fresh clone",
  async (binaries: Binaries, t) => {
    const { dir, clone } = await freshClone();
    const here = { checkout: clone, kubectl: binaries.kubectl };
    const clean = async () =>
      (await new Deno.Command("git", { args: ["status", "--porcelain"], cwd: clone }).output())
        .stdout;
    const running: Running[] = [];
    try {
      await t.step("`deno task` lists exactly the tasks this test runs", async () => {
        const list = ok(await inClone(clone, ["task"]));
        const names = [...(list.stdout + list.stderr).matchAll(/^- (\S+)$/gm)].map((m) => m[1]);
        expect(names.sort()).toEqual([...TASKS].sort());
      });

      await t.step("deno --version is the pinned Deno", async () => {
        const version = ok(await runDocumented("deno --version", here));
        expect(version.stdout).toMatch(/^deno 2\.9\.6 /);
      });

      await t.step(
        "check, fmt, lint, crds and docs pass and leave the clone as it was",
        async () => {
          for (const task of ["check", "fmt", "lint", "crds", "docs"]) {
            const result = await inClone(clone, ["task", task]);
            expect({ task, code: result.code }).toEqual({ task, code: 0 });
          }
          expect(new TextDecoder().decode(await clean())).toBe("");
        },
      );

      await t.step("test runs a test file with the suite's permissions", async () => {
        const result = await inClone(clone, ["task", "test", "cli/flags/flags_test.ts"]);
        expect(result.code).toBe(0);
        expect(result.stdout).toMatch(/^ok \| \d+ passed \| 0 failed/m);
      });

      await t.step(
        "test:unit runs a unit test file; one that runs a program is left out",
        async () => {
          const result = await inClone(clone, ["task", "test:unit", "cli/flags/flags_test.ts"]);
          expect(result.code).toBe(0);
          expect(result.stdout).toMatch(/^ok \| \d+ passed \| 0 failed/m);
          const left = await inClone(clone, [
            "task",
            "test:unit",
            "cli/plugin_loading/plugin_loading_process_test.ts",
          ]);
          expect(left.code).not.toBe(0);
          expect(left.stderr).toContain("No test modules found");
        },
      );

      await t.step("bench measures against its references", async () => {
        const result = ok(await runDocumented("deno task bench", here));
        expect(result.stdout).toMatch(/faster than|slower than/);
      });

      await t.step("bench:isolation, small: in-process against a Worker, as ratios", async () => {
        const result = ok(await runDocumented("deno task bench:isolation --count 50", here));
        expect(result.stdout).toContain("workerOverInProcess");
        expect(result.stdout).toContain("rssPerWorkerMiB");
      });

      await t.step("bench:http-memory, small: a few connections, memory by kind", async () => {
        // bench/README.md shows the full 30 s run; a small one, as the task, in the clone.
        const result = await inClone(clone, [
          "task",
          "bench:http-memory",
          ...["--shape", "connections", "--connections", "8", "--seconds", "1"],
          ...["--settle", "1", "--after", "1"],
        ]);
        expect({ code: result.code, stdout: result.stdout }).toEqual({
          code: 0,
          stdout: expect.stringContaining("connections: 8 connections"),
        });
        expect(result.stdout).toMatch(/^1 s after +\d/m);
      });

      await t.step("compile gets through everything before its download, offline", async () => {
        // The runtime base (denort) comes from the internet, which these machines cannot reach:
        // DENORT_BIN points compile at a local one (the Deno CLI stands in, so the output is not
        // a working operator; the release workflow builds and smoke-tests the real one).
        const result = await inClone(clone, ["task", "compile"], { DENORT_BIN: Deno.execPath() });
        const log = result.stderr + result.stdout;
        expect({ code: result.code, log }).toEqual({
          code: 0,
          log: expect.stringContaining("Compile"),
        });
        expect(log).not.toMatch(/^error|TS\d{4}/m);
        // The plugins are in the binary; test-only npm packages are not. (@peculiar/x509 is:
        // the self-managed webhook certificates are minted with it, on WebCrypto.)
        expect(log).toContain("status_aggregator.ts");
        for (const testOnly of ["@jest", "fast-check", "@sinonjs"]) {
          expect(log).not.toContain(testOnly);
        }
        expect(log).toContain("@logtape");
        expect((await Deno.stat(`${clone}/dist/ptemplate-operator`)).size).toBeGreaterThan(1e6);
      });

      await t.step(
        "bundle writes what the scorecard passes and the Dockerfile copies",
        async () => {
          const written = ok(
            await runDocumented(
              "deno task bundle --version 0.2.0 --image ghcr.io/<owner>/ptemplate-operator@sha256:… --bundle-image ghcr.io/<owner>/ptemplate-operator-bundle:v0.2.0 --replaces 0.1.0",
              here,
            ),
          );
          expect(written.stdout).toContain("wrote ./bundle.Dockerfile");
          for (const path of ["bundle/manifests", "bundle/metadata/annotations.yaml"]) {
            expect({ path, there: await exists(`${clone}/${path}`) }).toEqual({
              path,
              there: true,
            });
          }
          const catalog = await Deno.readTextFile(`${clone}/catalog/ptemplate-operator/index.yaml`);
          expect(catalog).toContain("replaces: ptemplate-operator.v0.1.0");
          const dockerfile = await Deno.readTextFile(`${clone}/bundle.Dockerfile`);
          for (const [, from] of dockerfile.matchAll(/^COPY (\S+) /gm)) {
            expect({ from, there: await exists(`${clone}/${from}`) }).toEqual({
              from,
              there: true,
            });
          }
          const scorecard = ok(
            await runDocumented(
              "deno run --allow-read --allow-env main.ts scorecard --bundle bundle",
              here,
            ),
          );
          expect(scorecard.stdout).not.toContain("FAIL");
          expect(scorecard.stdout).toMatch(/^pass /m);
          // Written files are ignored by git: the clone is still clean.
          expect(new TextDecoder().decode(await clean())).toBe("");
        },
      );

      await t.step("every subcommand, with the binary's permissions", async (t) => {
        const binary = (...args: string[]) =>
          inClone(clone, ["run", ...permissionFlags("start"), "main.ts", ...args]);
        const help = ok(await binary("--help"));
        const commands = [...help.stdout.matchAll(/^ {2}(\w+) {2,}/gm)].map((m) => m[1]);
        expect(commands).toEqual([
          "run",
          "crds",
          "rbac",
          "install",
          "check",
          "explain",
          "uninstall",
          "bundle",
          "scorecard",
          "version",
          "new",
        ]);
        await t.step("each says what its flags do, and offers none it ignores", async () => {
          for (const command of commands) {
            const own = ok(await binary(command, "--help"));
            expect(own.stdout).toContain(`ptemplate-operator ${command}: `);
          }
          expect((await binary("scorecard", "--help")).stdout).not.toContain("--output");
          expect((await binary("rbac", "--help")).stdout).toMatch(/--namespace NS +grant in/);
        });
        await t.step("version, crds, rbac, scorecard", async () => {
          expect(ok(await binary("version")).stdout).toMatch(/^ptemplate-operator \d+\.\d+\.\d+ /);
          const crds = parseAllDocuments(ok(await binary("crds")).stdout).map((d) => d.toJS());
          expect(crds.map((c) => c.metadata.name)).toEqual(["ptemplates.pt.example.com"]);
          const rbac = parseAllDocuments(ok(await binary("rbac")).stdout).map((d) => d.toJS());
          // Each role with its binding: what it prints is complete as it is applied.
          const kinds = (objects: { kind: string }[]) => objects.map((o) => o.kind).join(" ");
          const fence = "ValidatingAdmissionPolicy ValidatingAdmissionPolicyBinding";
          expect(kinds(rbac)).toBe(
            `ClusterRole ClusterRoleBinding Role RoleBinding ClusterRole ClusterRoleBinding ${fence}`,
          );
          const scoped = parseAllDocuments(ok(await binary("rbac", "--namespace", "team-a")).stdout)
            .map((d) => d.toJS());
          expect(kinds(scoped)).toBe(
            `Role RoleBinding Role RoleBinding ClusterRole ClusterRoleBinding ${fence}`,
          );
          // With --shards, the ring's Role, and the shard fence in place of the leader's: what
          // deploy/shards installs.
          const ring = parseAllDocuments(ok(await binary("rbac", "--shards")).stdout)
            .map((d) => d.toJS());
          expect(ring.slice(-2).map((o) => o.metadata.name)).toEqual([
            "ptemplate-operator-shard-fence",
            "ptemplate-operator-shard-fence",
          ]);
          expect(kinds(ring)).toBe(
            `ClusterRole ClusterRoleBinding Role RoleBinding Role RoleBinding ClusterRole ` +
              `ClusterRoleBinding ${fence}`,
          );
          const scorecard = ok(await binary("scorecard"));
          expect(scorecard.stdout).not.toContain("FAIL");
        });
        await t.step(
          "bundle and new without write permission say which task they need",
          async () => {
            const refused = await binary("bundle");
            expect(refused.code).toBe(1);
            expect(refused.stderr.trim().split("\n")).toEqual([
              expect.stringMatching(
                /^error: cannot write .*: no write permission\. `deno task bundle`/,
              ),
            ]);
            const scaffold = await binary(
              "new",
              "../x",
              "--name",
              "x",
              "--domain",
              "x.example.com",
            );
            expect(scaffold.code).toBe(1);
            expect(scaffold.stderr.trim().split("\n")).toEqual([
              expect.stringMatching(
                /^error: cannot write .*\/x\/deno\.json: no write permission\. `deno task new` in a ptemplate-operator checkout may write beside it/,
              ),
            ]);
            expect(await exists(`${dir}/x`)).toBe(false);
          },
        );
      });

      await t.step("cluster --nodes 2, and everything a cluster is needed for", async (t) => {
        const cluster = startDocumented("deno task cluster --nodes 2", here);
        running.push(cluster);
        const [, kubeconfig] = await printed(cluster, /export KUBECONFIG=(\S+)/);
        const [, pidList] = await printed(cluster, /Component PIDs: ([\d ]+)\n/);
        await printed(cluster, /Press Ctrl-C to stop everything/);
        const pids = pidList.trim().split(" ").map(Number);
        const folder = kubeconfig.slice(0, kubeconfig.lastIndexOf("/"));
        // A person who ran the printed `export KUBECONFIG=…`.
        const env = { KUBECONFIG: kubeconfig };
        const k = (args: string[], stdin?: string) =>
          kubectl(binaries.kubectl, kubeconfig, args, { stdin, cwd: clone });

        await t.step("its nodes are Ready, schedulable, and advertise the device", async () => {
          const nodes = JSON.parse((await k(["get", "nodes", "-o", "json"])).stdout).items;
          expect(nodes.map((n: { metadata: { name: string } }) => n.metadata.name)).toEqual([
            "worker-1",
            "worker-2",
          ]);
          for (const node of nodes) {
            expect(node.metadata.labels["node-role.kubernetes.io/worker"]).toBe("worker");
            expect(node.spec.taints ?? []).toEqual([]);
            expect(node.status.allocatable["example.com/ptemplate"]).toBe("64");
          }
        });

        await t.step("the README's install, as written", async () => {
          const installed = ok(await runDocumented("ptemplate-operator install", { ...here, env }));
          expect(installed.stdout).toContain(
            "installed CustomResourceDefinition ptemplates.pt.example.com",
          );
          ok(await runDocumented("kubectl apply -k deploy", { ...here, env }));
          ok(await runDocumented("kubectl apply -f examples/seed.yaml", { ...here, env }));
          const listed = ok(await runDocumented("kubectl get pt", { ...here, env }));
          expect(listed.stdout).toMatch(/^NAME +READY +REASON +CONSUMERS/);
          expect(listed.stdout).toContain("consumer-pod");
        });

        await t.step("deno task start converges the sample on the nodes; Ctrl-C", async () => {
          const start = startCommand([
            "deno",
            "task",
            "start",
            // Ports of its own: :8080 and :8081 may be taken on a shared machine.
            "--metrics-bind-address=127.0.0.1:0",
            "--health-probe-bind-address=127.0.0.1:0",
          ], { checkout: clone, env });
          running.push(start);
          await printed(start, /plugins: kmm-module, consumer-daemonset, status-aggregator;/);
          await eventually(async () => {
            const pt = JSON.parse((await k(["get", "pt", "consumer-pod", "-o", "json"])).stdout);
            expect(pt.status?.consumers).toHaveLength(2);
          }, { timeoutMs: 120_000 });
          // The README's numbers: 32 workers per plugin.
          expect(start.output()).toContain('"workers":32');
          expect(start.output()).not.toContain("undefined");

          // What the README says kubectl does with a field the schema does not know.
          const typo = "apiVersion: pt.example.com/v1alpha1\nkind: Ptemplate\n" +
            "metadata: {name: consumer-pod}\nspec:\n  maxdevs: 3\n" +
            "  selector: {node-role.kubernetes.io/worker: worker}\n";
          const applied = await k(["apply", "-f", "-"], typo);
          expect(applied.code).toBe(1);
          expect(applied.stderr).toContain('unknown field "spec.maxdevs"');
          const patched = await k([
            "patch",
            "pt",
            "consumer-pod",
            "--type",
            "merge",
            "-p",
            '{"spec":{"maxdevs":3}}',
          ]);
          expect(patched).toMatchObject({
            code: 0,
            stdout: expect.stringContaining("patched (no change)"),
            stderr: expect.stringContaining('Warning: unknown field "spec.maxdevs"'),
          });

          expect((await interrupt(start)).code).toBe(0);
          expect(start.output()).toContain("received SIGINT; shutting down");
        });

        await t.step("uninstall says what would go, and goes only with --yes", async () => {
          const binary = (...args: string[]) =>
            inClone(clone, ["run", ...permissionFlags("start"), "main.ts", ...args], env);
          const refused = await binary("uninstall");
          expect(refused.code).toBe(2);
          expect(refused.stdout).toContain("1 Ptemplate object(s) would be deleted");
          expect(ok(await binary("uninstall", "--yes")).stdout).toContain(
            "deleted CustomResourceDefinition ptemplates.pt.example.com",
          );
        });

        await t.step("Ctrl-C stops every component, removes the folder, exits 0", async () => {
          expect((await alive(pids)).length).toBeGreaterThanOrEqual(5);
          expect((await interrupt(cluster)).code).toBe(0);
          expect(cluster.output()).toContain("stopped; nothing left behind");
          expect(await alive(pids)).toEqual([]);
          expect(await exists(folder)).toBe(false);
        });
      });

      await t.step("dev: the demo, the commands it prints work, Ctrl-C stops all", async () => {
        const dev = startDocumented("npx --yes deno@2.9.6 task dev", here);
        running.push(dev);
        await printed(dev, /Press Ctrl-C to stop the operator and the control plane/);
        const text = dev.output();
        expect(text).toContain("Module consumer-pod");
        expect(text).toMatch(
          /DaemonSet consumer-pod-consumer +consumer pods: consumer-pod-consumer-\S+, consumer-pod-consumer-\S+/,
        );
        expect(text).toContain("started 32 worker(s)");
        expect(text).not.toContain("undefined");
        // The kubectl line it prints, run as printed.
        const [, kubeconfig] = text.match(/kubectl --kubeconfig (\S+) get ptemplates,/)!;
        const got = await kubectl(binaries.kubectl, kubeconfig, [
          "get",
          "ptemplates,modules,daemonsets,pods",
        ]);
        expect(got.stdout).toContain("ptemplate.pt.example.com/consumer-pod");
        // The curl lines, quoted for every shell, fetched as printed.
        const urls = [...text.matchAll(/curl -s '(http:\/\/127\.0\.0\.1:\d+\/[^']+)'/g)]
          .map((m) => m[1]);
        expect(urls).toHaveLength(2);
        for (const url of urls) {
          const response = await fetch(url);
          expect({ url, status: response.status }).toEqual({ url, status: 200 });
          await response.body?.cancel();
        }
        // The explain line, run as printed: the sample's reconciles, each with why it ran.
        const [explainLine] = text.match(/deno task start explain \S+ \S+ .*/)!;
        const explained = ok(await runPrinted(explainLine, here));
        expect(explained.stdout).toMatch(/^Ptemplate default\/consumer-pod: \d+ recent visit/);
        for (const controller of ["kmm-module", "consumer-daemonset", "status-aggregator"]) {
          expect(explained.stdout).toMatch(new RegExp(`  ${controller} +reconciled in \\d+ ms`));
        }
        // The first visit's cause: the sample's creation, or the operator's start when its first
        // list already held the sample (dev applies it while the operator starts; either may win).
        expect(explained.stdout).toMatch(
          /why {4}(created Ptemplate default\/consumer-pod|start\n)/,
        );
        expect(explained.stdout).toMatch(
          /wrote {2}PATCH \/apis\/apps\/v1\/namespaces\/default\/daemonsets\/consumer-pod-consumer → 201/,
        );
        // Refused without authorisation: no token, and a token for someone not granted it.
        const endpoint = explainLine.match(/--endpoint (\S+)/)![1];
        const bare = await fetch(
          `${endpoint}/debug/explain?kind=Ptemplate&group=pt.example.com` +
            "&namespace=default&name=consumer-pod",
        );
        expect(bare.status).toBe(401);
        await bare.body?.cancel();
        const cert = await runPrinted(explainLine.replace(/ --service-account \S+/, ""), here);
        expect(cert.code).toBe(2);
        expect(cert.stderr).toContain("give --service-account");
        const folder = kubeconfig.slice(0, kubeconfig.lastIndexOf("/"));
        expect((await interrupt(dev)).code).toBe(0);
        expect(dev.output()).toContain("stopping the control plane");
        expect(await exists(folder)).toBe(false);
      });

      await t.step("bench:latency, small: the table, lease kept, no new connection", async () => {
        const result = ok(
          await runDocumented("deno task bench:latency --latency 200 --seconds 5", here),
        );
        expect(result.stdout).toMatch(/^200 ms \| \d+ \| 0 \| .* \| 0 \| 0$/m);
      });

      await t.step(
        "bench:namespaces, small: per namespace, all, across; none replaced",
        async () => {
          const result = ok(
            await runDocumented(
              "deno task bench:namespaces --namespaces 12 --seconds 2 --out namespaces.json",
              here,
            ),
          );
          expect(result.stdout).toMatch(/^\| 12 listed, Roles only: .* \| 73 \| .* \| 0 \|$/m);
          expect(result.stdout).toMatch(/^\| 12 listed, ClusterRole: .* \| 7 \| .* \| 0 \|$/m);
          const json = JSON.parse(await Deno.readTextFile(`${clone}/namespaces.json`));
          expect(json).toMatchObject({
            namespaces: 12,
            listedAcross: { watchedAcross: expect.any(String) },
          });
        },
      );

      await t.step("bench:memory-floor, once: every row, the operator above deno", async () => {
        const result = ok(
          await runDocumented(
            "deno task bench:memory-floor --repeat 1 --idle 5 --out floor.json",
            here,
          ),
        );
        expect(result.stdout).toMatch(/^\| the operator \(as bench:scale runs it\) \| [\d.]+ \|/m);
        expect(result.stdout).toMatch(/idle for 5 s: [\d.]+ CPU-s a minute; then [\d.]+ MiB/);
        const json = JSON.parse(await Deno.readTextFile(`${clone}/floor.json`));
        const rss = (name: string) =>
          json.rows.find((r: { name: string }) => r.name === name).rssMiB;
        // An operator that has loaded its modules and synced its caches holds more than deno idle.
        expect(rss("the operator (as bench:scale runs it)")).toBeGreaterThan(
          rss("an empty program"),
        );
        const operator = json.rows.find((r: { idle?: boolean }) => r.idle);
        expect(typeof operator?.idleCpuSecondsPerMinute).toBe("number");
        expect(operator.atRest.rssMiB).toBeGreaterThan(rss("an empty program"));
        // The libraries the operator starts with weigh on the I/O floor (npm, Node built-ins).
        expect(rss("the same I/O, with LogTape and the node: modules the operator imports"))
          .toBeGreaterThan(rss("the operator's I/O alone"));
        // The bundle was built, and the operator it holds synced its caches.
        expect(rss("the operator, one minified bundle")).toBeGreaterThan(rss("an empty program"));
      });

      await t.step("bench:request-cost, small: Deno, our client and Go, side by side", async () => {
        const result = ok(
          await runDocumented(
            "deno task bench:request-cost --requests 200 --events 1000 --rounds 1 --out cost.json",
            here,
          ),
        );
        expect(result.stdout).toMatch(
          /^\| GET over HTTP\/2, answer parsed \| our client \| [\d.]+ \| [\d.]+× \|/m,
        );
        const json = JSON.parse(await Deno.readTextFile(`${clone}/cost.json`));
        // Both sides ran on the same DaemonSet, the controller's status in it, and were measured.
        expect(json.eventBytes).toBeGreaterThan(1000);
        expect(json.rows.map((r: { side: string }) => r.side)).toEqual([
          "Deno's fetch",
          "our client",
          "Go's net/http",
          "V8's JSON.parse",
          "Go's encoding/json",
        ]);
        for (const row of json.rows) expect(row.cpuMicros).toBeGreaterThan(0);
      });

      await t.step("bench:scale, small: the table and its JSON", async () => {
        const result = ok(
          await runDocumented("deno task bench:scale --count 5 --nodes 1 --out scale.json", here),
        );
        expect(result.stdout + result.stderr).toContain("all children exist");
        const json = JSON.parse(await Deno.readTextFile(`${clone}/scale.json`));
        expect(json).toMatchObject({ count: 5, nodes: 1 });
        for (const key of ["childrenSeconds", "writesTotal", "peakRssMiB", "writesWhileIdle"]) {
          expect({ key, type: typeof json[key] }).toEqual({ key, type: "number" });
        }
        // The replica's CPU by thread: the main thread, named after the executable, ran.
        const [threads] = json.threadCpu as { name: string; user: number }[][];
        expect(threads.find((t) => t.name === "deno")?.user).toBeGreaterThan(0);
      });

      await t.step("bench:backlog, small: both queues, both backlogs, in the JSON", async () => {
        const result = ok(
          await runDocumented(
            "deno task bench:backlog --count 20 --rate 2 --out backlog.json",
            here,
          ),
        );
        expect(result.stdout).toMatch(/^\| takeover of \d+ \| priority \|/m);
        const json = JSON.parse(await Deno.readTextFile(`${clone}/backlog.json`));
        expect(json).toMatchObject({ count: 20, changesPerSecond: 2 });
        for (const backlog of ["takeover", "restart"]) {
          for (const queue of ["priority", "fifo"]) {
            const figures = json.editDuringBacklog[backlog][queue];
            expect({ backlog, queue, drain: typeof figures.backlogDrainMs }).toEqual({
              backlog,
              queue,
              drain: "number",
            });
          }
        }
      });

      await t.step("bench:scale with sharded replicas, small: each replica's memory", async () => {
        const result = ok(
          await runDocumented(
            "deno task bench:scale --count 5 --replicas 2 --shards --out shards.json",
            here,
          ),
        );
        expect(result.stdout + result.stderr).toContain("peak RSS, largest replica");
        const json = JSON.parse(await Deno.readTextFile(`${clone}/shards.json`));
        expect(json).toMatchObject({ count: 5, replicas: 2, shards: 2 });
        expect(json.replicaRssMiB).toHaveLength(2);
        expect(json.writesWhileIdle).toBe(0);
      });

      await t.step("bench:scale with a CPU limit per replica: throttled, or why not", async () => {
        const before = await benchCgroups();
        const result = await runDocumented(
          "deno task bench:scale --count 5 --replicas 2 --shards --cpu-limit 0.5 --out limited.json",
          here,
        );
        if (!await cgroupsWritable()) {
          // A machine whose cgroups this user may not write: the bench says so, and what to do.
          expect(result.code).not.toBe(0);
          expect(result.stderr).toContain("--cpu-limit needs a cgroup CPU controller");
          expect(result.stderr).toContain("drop --cpu-limit");
          console.warn(`cgroups not writable here: checked the bench's refusal only`);
          return;
        }
        ok(result);
        expect(result.stdout).toMatch(/\| CPU limit per replica \| 0\.5 cores \| throttled in/);
        const json = JSON.parse(await Deno.readTextFile(`${clone}/limited.json`));
        expect(json).toMatchObject({ count: 5, replicas: 2, shards: 2, cpuLimitPerReplica: 0.5 });
        expect(json.childrenCpu.throttled).toHaveLength(2);
        // Each replica's cgroup is gone with it.
        expect((await benchCgroups()).filter((dir) => !before.includes(dir))).toEqual([]);
      });
    } finally {
      for (const process of running) {
        try {
          Deno.kill(-process.child.pid, "SIGKILL");
        } catch {
          // exited
        }
        await process.exited();
      }
      await Deno.remove(dir, { recursive: true });
    }
  },
);
