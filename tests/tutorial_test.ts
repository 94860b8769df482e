/**
 * docs/tutorial.md followed as written, from a fresh clone to a deployed operator: its blocks in
 * order, each done as its `<!-- tutorial: … -->` marker says (tests/fixtures/tutorial_blocks.ts):
 * files written, commands run in the folder named against a real control plane (KUBECONFIG set,
 * as a reader's current context), the operator started and stopped with Ctrl-C, outputs compared
 * (AGE aside, looked at again until the operator has caught up), and skipped commands excused in
 * NOT_RUN. What the commands should have made is checked through the API too: the CronJob
 * controlled by its Backup and written by the plugin's field manager, its status condition, and
 * the deployed operator's pod holding the Lease and reconciling.
 */
import { expect } from "expect";
import { parseAllDocuments } from "yaml";
import { LEASE } from "../kube/kinds.ts";
import type { KubeObject } from "../kube/object.ts";
import type { Resource } from "../kube/resource.ts";
import type { Condition } from "../mod.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import {
  type CommandResult,
  documented,
  NOT_RUN,
  runDocumented,
  type Running,
  startDocumented,
} from "./fixtures/documented_commands.ts";
import { freshClone } from "./fixtures/fresh_clone.ts";
import { type DeployedPod, runAsItsPod } from "./fixtures/own_operator_process.ts";
import { tableCells, tutorialBlocks } from "./fixtures/tutorial_blocks.ts";

const TUTORIAL = "docs/tutorial.md";

/** The tutorial's kind, as its reader's cluster stores it. */
interface Backup extends KubeObject {
  spec: { schedule: string; from: string; to: string; suspend?: boolean };
  status?: { cronJob?: string; conditions?: Condition[]; observedGeneration?: number };
}
const BACKUP: Resource<Backup, true> = {
  group: "backup.example.com",
  version: "v1alpha1",
  kind: "Backup",
  plural: "backups",
  namespaced: true,
};
const CRON_JOB: Resource<KubeObject & { spec?: { schedule?: string; suspend?: boolean } }, true> = {
  group: "batch",
  version: "v1",
  kind: "CronJob",
  plural: "cronjobs",
  namespaced: true,
};

/**
 * Every command the tutorial runs, in order (the literals tests/documented_commands_test.ts looks
 * for); the walk checks the tutorial shows exactly these.
 */
const NEW = documented(
  "deno task new ../backup-operator --name backup-operator --domain backup.example.com",
);
const NEW_PLUGIN = documented("deno task new plugin Backup");
const CRDS = documented("deno task crds");
const CHECK = documented("deno task check");
const TEST = documented("deno task test plugins/backup/");
const INSTALL = documented("deno task install");
const START = documented("deno task start");
const APPLY_EXAMPLES = documented("kubectl apply -f examples/");
const WAIT_READY = documented("kubectl wait --for=condition=Ready backup/sample --timeout=60s");
const GET_BACKUPS = documented("kubectl get backups");
const GET_CRON_JOBS = documented("kubectl get cronjobs");
const REFUSED = documented(
  `kubectl patch backup sample --type=merge -p '{"spec":{"to":"data"}}'`,
);
const DEPLOY = documented("kubectl apply -k deploy");
const SUSPEND = documented(
  `kubectl patch backup sample --type=merge -p '{"spec":{"suspend":true}}'`,
);
const WAIT_SUSPENDED = documented(
  "kubectl wait --for=condition=Ready=false backup/sample --timeout=60s",
);
const RUN = [
  NEW,
  NEW_PLUGIN,
  CRDS,
  CHECK,
  TEST,
  INSTALL,
  START,
  APPLY_EXAMPLES,
  WAIT_READY,
  GET_BACKUPS,
  GET_CRON_JOBS,
  REFUSED,
  DEPLOY,
  SUSPEND,
  WAIT_SUSPENDED,
  GET_CRON_JOBS,
];

await integrationTest(
  "the tutorial, as written: a Backup operator from a clone to a cluster",
  {},
  async (
    plane,
    step,
  ) => {
    const blocks = tutorialBlocks(
      await Deno.readTextFile(new URL(`../${TUTORIAL}`, import.meta.url)),
    );
    expect(blocks.flatMap((b) => b.does === "skip" ? [] : "commands" in b ? b.commands : []))
      .toEqual(RUN);
    const { dir, clone } = await freshClone();
    const admin = plane.client();
    const started: Running[] = [];
    let pod: DeployedPod | undefined;
    let failed = false;
    let folder = clone;
    let last: { command: string; result: CommandResult; options: object } | undefined;

    /** What the tutorial says should be true once `command` has run, seen through the API. */
    const checks: Record<string, () => Promise<void>> = {
      [CRDS]: async () => {
        // owns: [CRON_JOB] is the RBAC deploy/ grants: CronJobs, and no longer ConfigMaps.
        const rbac = parseAllDocuments(await Deno.readTextFile(`${folder}/deploy/rbac/rbac.yaml`))
          .map((d) => d.toJS());
        const rules = rbac.find((o) => o.kind === "ClusterRole").rules;
        expect(rules).toContainEqual(expect.objectContaining({
          apiGroups: ["batch"],
          resources: ["cronjobs"],
        }));
        expect(JSON.stringify(rules)).not.toContain("configmaps");
      },
      [TEST]: () => {
        expect(last!.result.stdout).toMatch(/^ok \| 3 passed \(2 steps\) \| 0 failed/m);
        return Promise.resolve();
      },
      [WAIT_READY]: async () => {
        const backup = await admin.get(BACKUP, "sample", { namespace: "default" });
        const cronJob = await admin.get(CRON_JOB, "sample-backup", { namespace: "default" });
        expect(cronJob.spec?.schedule).toBe("0 3 * * *");
        expect(cronJob.metadata.ownerReferences).toEqual([expect.objectContaining({
          kind: "Backup",
          uid: backup.metadata.uid,
          controller: true,
        })]);
        expect(cronJob.metadata.managedFields?.map((f) => f.manager)).toEqual([
          "backup-operator/backup",
        ]);
        expect(backup.status).toMatchObject({
          cronJob: "sample-backup",
          observedGeneration: backup.metadata.generation,
          conditions: [{
            type: "Ready",
            status: "True",
            reason: "Scheduled",
            observedGeneration: backup.metadata.generation,
          }],
        });
      },
      [DEPLOY]: async () => {
        // No kubelet: the test runs the Deployment's container as one of its pods.
        pod = await runAsItsPod(plane, {
          folder,
          name: "backup-operator",
          namespace: "backup-operator-system",
        });
        started.push(pod.running);
      },
      [WAIT_SUSPENDED]: async () => {
        const backup = await admin.get(BACKUP, "sample", { namespace: "default" });
        expect(backup.status?.conditions?.[0]).toMatchObject({
          status: "False",
          reason: "Suspended",
          observedGeneration: backup.metadata.generation,
        });
        const cronJob = await admin.get(CRON_JOB, "sample-backup", { namespace: "default" });
        expect(cronJob.spec?.suspend).toBe(true);
        // The deployed one did it: its pod holds the Lease, and the local run had stopped.
        const lease = await admin.get(LEASE, "backup-operator.backup.example.com", {
          namespace: "backup-operator-system",
        });
        expect(lease.spec?.holderIdentity).toMatch(new RegExp(`^${pod!.pod}_`));
      },
    };

    try {
      for (const [i, block] of blocks.entries()) {
        const what = "path" in block ? block.path : "commands" in block ? block.commands : [];
        const title = `${i + 1}. ${block.does} ${[what].flat().join("; ")}`.trim();
        const ok = await step(title, async () => {
          switch (block.does) {
            case "write":
              await Deno.writeTextFile(`${folder}/${block.path}`, block.text);
              return;
            case "skip":
              for (const command of block.commands) {
                expect({ command, why: !!NOT_RUN[command] })
                  .toEqual({ command, why: true });
              }
              return;
            case "ctrl-c":
              for (const running of started.splice(0)) {
                running.interrupt();
                const status = await running.exited();
                expect({ code: status.code, output: status.success ? "" : running.output() })
                  .toEqual({ code: 0, output: "" });
              }
              return;
            case "output": {
              const { command, options } = last!;
              const expected = tableCells(block.text);
              // A reader looks again until the operator has caught up; so does the walk.
              await eventually(async () => {
                const result = await runDocumented(command, options);
                expect(tableCells(result.code ? result.stderr : result.stdout)).toEqual(expected);
              }, { timeoutMs: 60_000, intervalMs: 500 });
              return;
            }
          }
          folder = `${dir}/${block.folder}`;
          const options = {
            cwd: folder,
            checkout: clone,
            kubectl: plane.binaries.kubectl,
            env: { KUBECONFIG: plane.adminKubeconfigPath },
          };
          for (const command of block.commands) {
            if (block.does === "start") {
              // On ports of the test's choosing: tests share this machine (the page says how).
              started.push(startDocumented(command, {
                ...options,
                extraArgs: ["--metrics-bind-address=0", "--health-probe-bind-address=0"],
              }));
              continue;
            }
            const result = await runDocumented(command, options);
            last = { command, result, options };
            if (block.does === "fails") {
              expect({ command, failed: result.code !== 0 }).toEqual({ command, failed: true });
            } else {
              expect({ command, code: result.code, stderr: result.code ? result.stderr : "" })
                .toEqual({ command, code: 0, stderr: "" });
            }
            await checks[command]?.();
          }
        });
        if (!ok) {
          failed = true;
          break;
        }
      }
    } finally {
      for (const running of started) {
        running.interrupt();
        const status = await running.exited();
        if (failed || !status.success) console.error(running.output().slice(-4000));
      }
      if (!failed) await Deno.remove(dir, { recursive: true });
      else console.error(`the tutorial's folders kept in ${dir}`);
    }
    expect(failed).toBe(false);
  },
);
