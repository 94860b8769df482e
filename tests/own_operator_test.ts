/**
 * Operators of one's own, the way the guides make them, outside this repository: `deno task new`
 * from a fresh clone, as written (offline: it imports the clone), then `new plugin Backup` in the
 * new folder, whose files pass its own `check` and `test` at once (unit, integration, its deploy
 * rendered and installed, its OLM bundle validated), whose `rbac` and `crds` name it and its kind,
 * and whose generated types follow its schema. Then two such operators with the same plugin name
 * and kind (in two domains) run in one control plane as real processes: one deployed as its guide
 * says (`deno task install`, `kubectl apply -k deploy`, its Deployment's own arguments as its pod,
 * its sample applied and reconciled), the other as its own ServiceAccount with the RBAC its `rbac`
 * prints: both converge, the audit log shows neither writing an object of the other, their Leases
 * and RBAC objects are distinct, and uninstalling one leaves the other working.
 */
import { expect } from "expect";
import { parseAllDocuments } from "yaml";
import { CLUSTER_ROLE, CONFIG_MAP, LEASE, NAMESPACE } from "../kube/kinds.ts";
import type { KubeObject, Unstructured } from "../kube/object.ts";
import type { Resource } from "../kube/resource.ts";
import { WRITE_VERBS } from "../testing/audit_log.ts";
import { ControlPlane } from "../testing/control_plane.ts";
import { eventually } from "../testing/eventually.ts";
import { binariesTest } from "../testing/integration_test_case.ts";
import { documented, runDocumented, type Running } from "./fixtures/documented_commands.ts";
import { freshClone } from "./fixtures/fresh_clone.ts";
import { kubectlOk } from "./fixtures/kubectl.ts";
import { runAsItsPod, startOwnOperator } from "./fixtures/own_operator_process.ts";
import { denoIn as deno } from "./fixtures/deno_in.ts";

/** An operator made by the scaffold, and where it is. */
interface Own {
  name: string;
  domain: string;
  folder: string;
  namespace: string;
  /** Its kind, Backup in its domain. */
  backup: Resource<
    KubeObject & { spec: { message: string }; status?: { configMap?: string } },
    true
  >;
  serviceAccount: string;
  lease: string;
}

function own(dir: string, name: string, domain: string): Own {
  return {
    name,
    domain,
    folder: `${dir}/${name}`,
    namespace: `${name}-system`,
    backup: {
      group: domain,
      version: "v1alpha1",
      kind: "Backup",
      plural: "backups",
      namespaced: true,
    },
    serviceAccount: `system:serviceaccount:${name}-system:${name}`,
    lease: `${name}.${domain}`,
  };
}

/** Like `deno`, but a failure throws with what it printed. */
async function denoOk(cwd: string, ...args: string[]) {
  const result = await deno(cwd, ...args);
  if (result.code !== 0) {
    throw new Error(
      `deno ${args.join(" ")} in ${cwd} exited ${result.code}:\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result;
}

/** Every file under `dir` (but deno.lock) with its text. */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) { for (const [p, t] of await snapshot(path)) files.set(p, t); }
    else if (entry.name !== "deno.lock") files.set(path, await Deno.readTextFile(path));
  }
  return files;
}

const NEW = documented(
  "deno task new ../backup-operator --name backup-operator --domain backup.example.com",
);
const NEW_PLUGIN = documented("deno task new plugin Backup");
const CHECK = documented("deno task check");
const INSTALL = documented("deno task install");
const APPLY_DEPLOY = documented("kubectl apply -k deploy");
const APPLY_EXAMPLES = documented("kubectl apply -f examples/");
const GET_BACKUPS = documented("kubectl get backups");

await binariesTest(
  "own operators: scaffolded outside this repository, two in one cluster",
  async (binaries, t) => {
    const { dir, clone } = await freshClone();
    const a = own(dir, "backup-operator", "backup.example.com");
    // The same plugin name and kind, another operator: nothing of theirs may be shared.
    const b = own(dir, "archive-operator", "archive.example.com");
    const running: Running[] = [];
    let plane: ControlPlane | undefined;
    let failed = false;
    const step = async (name: string, fn: () => Promise<void>) => {
      if (!await t.step(name, fn)) failed = true;
    };
    try {
      await step(
        "new, as the README says, writes a repository beside the clone, once",
        async () => {
          // As written: no --runtime, no network; it imports the clone it runs from, and says so.
          const made = await runDocumented(NEW, { cwd: clone, checkout: clone });
          expect({ code: made.code, stderr: made.code ? made.stderr : "" }).toEqual({
            code: 0,
            stderr: "",
          });
          expect(made.stdout).toContain(
            "runtime: this checkout, ../ptemplate-operator/ (imported from disk, no network needed)",
          );
          const config = JSON.parse(await Deno.readTextFile(`${a.folder}/deno.json`));
          expect(config.imports["ptemplate-operator/"]).toBe("../ptemplate-operator/");
          // Again: refused, and nothing changed.
          const before = await snapshot(a.folder);
          const again = await runDocumented(NEW, { cwd: clone, checkout: clone });
          expect(again.code).not.toBe(0);
          expect(again.stderr).toContain("already exist");
          expect(await snapshot(a.folder)).toEqual(before);
          // The other one, the same way.
          await denoOk(
            clone,
            "task",
            "new",
            `../${b.name}`,
            "--name",
            b.name,
            "--domain",
            b.domain,
            "--runtime",
            clone,
          );
        },
      );

      await step("new plugin Backup adds the kind, its CRD, types, plugin and tests", async () => {
        for (const op of [a, b]) {
          const added = await runDocumented(NEW_PLUGIN, { cwd: op.folder, checkout: clone });
          expect({ code: added.code, stderr: added.code ? added.stderr : "" }).toEqual({
            code: 0,
            stderr: "",
          });
          expect(added.stdout).toContain(`Backup (${op.domain}/v1alpha1) is ready`);
          expect(added.stdout).toContain(`wrote ${op.folder}/examples/backup.yaml`);
        }
        const refused = await deno(a.folder, "task", "new", "plugin", "Backup");
        expect(refused.code).not.toBe(0);
        expect(refused.stderr).toContain("already exist");
      });

      await step(
        "what they wrote passes its own check (types, fmt, lint) and test, at once",
        async () => {
          const checked = await runDocumented(CHECK, { cwd: a.folder, checkout: clone });
          expect({ code: checked.code, stderr: checked.code ? checked.stderr : "" }).toEqual({
            code: 0,
            stderr: "",
          });
          const tested = await denoOk(a.folder, "task", "test");
          expect(tested.stdout).toMatch(/^ok \| 4 passed \(5 steps\) \| 0 failed/m);
          // Unit, integration against a control plane, the generated files' staleness, and its
          // deploy rendered, installed and its bundle validated.
          for (
            const name of [
              "it asks for one ConfigMap",
              "backup plugin against a real API server",
              "crds/, each kind's types and deploy/rbac",
              "kubectl kustomize renders deploy/ and its overlays",
              "the API server takes it: kubectl apply -k deploy",
              "its OLM bundle passes the scorecard and OLM's validators",
            ]
          ) {
            expect(tested.stdout).toContain(name);
          }
        },
      );

      await step("its rbac, crds and version name it and its kind", async () => {
        const rbac = parseAllDocuments((await denoOk(a.folder, "task", "start", "rbac")).stdout)
          .map((d) => d.toJS());
        expect(rbac.map((o) => `${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`))
          .toEqual([
            "ClusterRole /backup-operator",
            "ClusterRoleBinding /backup-operator",
            "Role backup-operator-system/backup-operator-leader-election",
            "RoleBinding backup-operator-system/backup-operator-leader-election",
            "ClusterRole /backup-operator-metrics-auth",
            "ClusterRoleBinding /backup-operator-metrics-auth",
            "ValidatingAdmissionPolicy /backup-operator-leader-fence",
            "ValidatingAdmissionPolicyBinding /backup-operator-leader-fence",
          ]);
        expect(rbac[0].rules).toContainEqual({
          apiGroups: [a.domain],
          resources: ["backups"],
          verbs: ["list", "watch"],
        });
        expect(JSON.stringify(rbac)).not.toContain("ptemplate");
        const crds = parseAllDocuments((await denoOk(a.folder, "task", "start", "crds")).stdout)
          .map((d) => d.toJS());
        expect(crds.map((c) => c.metadata.name)).toEqual([`backups.${a.domain}`]);
        expect((await denoOk(a.folder, "task", "start", "version")).stdout).toMatch(
          /^backup-operator 0\.1\.0 /,
        );
      });

      await step(
        "its types follow its schema: a new field, deno task crds, and they have it",
        async () => {
          const crd = `${b.folder}/plugins/backup/crd.ts`;
          const source = await Deno.readTextFile(crd);
          await Deno.writeTextFile(
            crd,
            source.replace(
              "    properties: {\n",
              '    properties: {\n      retentionDays: { type: "integer", minimum: 1, description: "Days to keep." },\n',
            ),
          );
          const stale = await deno(b.folder, "task", "test", "crds_test.ts");
          expect(stale.code).not.toBe(0);
          expect(stale.stderr + stale.stdout).toContain("plugins/backup/backup_types.ts (stale)");
          await denoOk(b.folder, "task", "crds");
          const types = await Deno.readTextFile(`${b.folder}/plugins/backup/backup_types.ts`);
          expect(types).toContain("  /** Days to keep. */\n  retentionDays?: number;\n");
          expect(await Deno.readTextFile(`${b.folder}/crds/backups.${b.domain}.yaml`)).toContain(
            "retentionDays:",
          );
          await denoOk(b.folder, "task", "test", "crds_test.ts");
          await denoOk(b.folder, "check", ".");
        },
      );
      if (failed) return;

      plane = await ControlPlane.start({ binaries, audit: true });
      const admin = plane.client();
      const adminKubeconfig = plane.adminKubeconfigPath;
      await admin.create(NAMESPACE, { metadata: { name: "shared" } });

      const asUser = { cwd: a.folder, checkout: clone, kubectl: binaries.kubectl };
      const userEnv = { env: { KUBECONFIG: adminKubeconfig } };

      await step(
        "one is deployed as its guide says: install, apply -k deploy, its pod runs, its sample converges",
        async () => {
          for (const command of [INSTALL, APPLY_DEPLOY]) {
            const done = await runDocumented(command, { ...asUser, ...userEnv });
            expect({ command, code: done.code, stderr: done.code ? done.stderr : "" }).toEqual({
              command,
              code: 0,
              stderr: "",
            });
          }
          // There is no kubelet: the test runs the Deployment's container, as one of its pods
          // (its token names the pod, and so does POD_NAME: the leader fence judges its writes).
          const { running: itsPod, deployment, pod } = await runAsItsPod(plane!, a);
          running.push(itsPod);
          const container = deployment.spec!.template.spec!.containers[0];
          expect(container.image).toBe(`${a.name}:v0.1.0`);
          expect(deployment.spec!.template.spec!.serviceAccountName).toBe(a.name);
          const applied = await runDocumented(APPLY_EXAMPLES, { ...asUser, ...userEnv });
          expect(applied).toMatchObject({ code: 0 });
          expect(applied.stdout).toContain("backup.backup.example.com/sample created");
          await eventually(async () => {
            const made = await admin.get(CONFIG_MAP, "sample-backup", { namespace: "default" });
            expect(made.data).toEqual({ message: "hello from the backup plugin" });
            const sample = await admin.get(a.backup, "sample", { namespace: "default" });
            expect(sample.status?.configMap).toBe("sample-backup");
          }, { timeoutMs: 120_000 });
          const listed = await runDocumented(GET_BACKUPS, { ...asUser, ...userEnv });
          expect(listed.stdout).toMatch(/^sample +/m);
          // Its pod held the Lease: the leader fence let its writes through.
          const lease = await admin.get(LEASE, a.lease, { namespace: a.namespace });
          expect(lease.spec?.holderIdentity).toMatch(new RegExp(`^${pod}_`));
        },
      );

      await step(
        "the other is installed as its own ServiceAccount with the RBAC its rbac prints",
        async () => {
          await denoOk(b.folder, "task", "start", "install", "--kubeconfig", adminKubeconfig);
          await Deno.writeTextFile(
            `${b.folder}/rbac.yaml`,
            (await denoOk(b.folder, "task", "rbac")).stdout,
          );
          const identity = await plane!.serviceAccountIdentity(b.namespace, b.name);
          await kubectlOk(binaries.kubectl, adminKubeconfig, ["apply", "-f", "rbac.yaml"], {
            cwd: b.folder,
          });
          running.push(
            startOwnOperator(
              b.folder,
              ["--leader-elect", `--leader-election-namespace=${b.namespace}`],
              identity.kubeconfigPath,
            ),
          );
        },
      );

      // Both ask for a ConfigMap "same-backup": the first to create it keeps it, the other reports.
      const objects = { [a.name]: ["nightly", "same"], [b.name]: ["weekly", "same"] };
      await step("both converge, each on its own kind", async () => {
        for (const op of [a, b]) {
          for (const name of objects[op.name]) {
            await admin.create(op.backup, {
              metadata: { name, namespace: "shared" },
              spec: { message: `${name} from ${op.name}` },
            });
          }
        }
        for (const [op, name] of [[a, "nightly"], [b, "weekly"]] as const) {
          await eventually(async () => {
            const configMap = await admin.get(CONFIG_MAP, `${name}-backup`, {
              namespace: "shared",
            });
            expect(configMap.data).toEqual({ message: `${name} from ${op.name}` });
            expect(configMap.metadata.labels).toEqual({ [`${op.lease}/plugin`]: "backup" });
            const managers = configMap.metadata.managedFields?.map((f) => f.manager);
            expect(managers).toEqual([`${op.name}/backup`]);
            const backup = await admin.get(op.backup, name, { namespace: "shared" });
            expect(backup.status?.configMap).toBe(`${name}-backup`);
          }, { timeoutMs: 120_000 });
        }
      });

      let owners: Record<string, string[]> = {};
      await step(
        "neither writes an object of the other (audit log), nor is refused one",
        async () => {
          const same = await eventually(() =>
            admin.get(CONFIG_MAP, "same-backup", { namespace: "shared" })
          );
          const winner = [a, b].find((op) => same.data?.message === `same from ${op.name}`)!;
          expect(same.metadata.ownerReferences?.map((r) => r.apiVersion)).toEqual([
            `${winner.domain}/v1alpha1`,
          ]);
          owners = {
            [a.name]: ["nightly-backup", ...winner === a ? ["same-backup"] : []],
            [b.name]: ["weekly-backup", ...winner === b ? ["same-backup"] : []],
          };
          const audit = await plane!.auditEvents();
          for (const [op, other] of [[a, b], [b, a]] as const) {
            const mine = audit.filter((e) => e.user.username === op.serviceAccount);
            expect(mine.filter((e) => e.responseStatus?.code === 403).map((e) => e.requestURI))
              .toEqual([]);
            const writes = mine.filter((e) =>
              WRITE_VERBS.has(e.verb) && (e.responseStatus?.code ?? 500) < 400
            );
            expect(writes.length).toBeGreaterThan(0);
            const ofOther = writes.filter((e) => {
              const ref = e.objectRef ?? {};
              return ref.apiGroup === other.domain ||
                (ref.resource === "configmaps" && owners[other.name].includes(ref.name ?? "")) ||
                (ref.resource === "leases" &&
                  (ref.name === other.lease || ref.namespace === other.namespace));
            });
            expect(ofOther.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
            // What it wrote at all: its kind's status, its ConfigMaps, its Lease, and Events.
            const what = new Set(
              writes.map((e) => `${e.objectRef?.apiGroup ?? ""} ${e.objectRef?.resource}`),
            );
            const allowed = [
              " configmaps",
              " events",
              `${op.domain} backups`,
              "coordination.k8s.io leases",
            ];
            expect([...what].filter((w) => !allowed.includes(w))).toEqual([]);
            expect(what.size).toBeGreaterThanOrEqual(3);
          }
        },
      );

      await step("their Leases and RBAC objects are distinct", async () => {
        for (const op of [a, b]) {
          const lease = await admin.get(LEASE, op.lease, { namespace: op.namespace });
          expect(lease.spec?.holderIdentity).toBeTruthy();
        }
        const rbacOf = (op: Own) => op === a ? "deploy/rbac/rbac.yaml" : "rbac.yaml";
        const names = async (op: Own) =>
          parseAllDocuments(await Deno.readTextFile(`${op.folder}/${rbacOf(op)}`)).map((d) => {
            const o = d.toJS() as Unstructured;
            return `${o.kind} ${o.metadata?.namespace ?? ""}/${o.metadata?.name}`;
          });
        const [ofA, ofB] = [await names(a), await names(b)];
        expect(ofA.filter((n) => ofB.includes(n))).toEqual([]);
        expect(ofA.length).toBe(8);
        expect(ofB.length).toBe(8);
      });

      await step("uninstalling one leaves the other working", async () => {
        const stopped = running.shift()!;
        stopped.interrupt();
        expect((await stopped.exited()).code).toBe(0);
        const removed = await denoOk(
          a.folder,
          "task",
          "start",
          "uninstall",
          "--yes",
          "--kubeconfig",
          adminKubeconfig,
        );
        expect(removed.stdout).toContain(`deleted CustomResourceDefinition backups.${a.domain}`);
        // Not waiting for its namespace to go: no namespace controller runs here.
        await kubectlOk(binaries.kubectl, adminKubeconfig, [
          "delete",
          "-k",
          "deploy",
          "--wait=false",
        ], {
          cwd: a.folder,
        });
        // The other's objects are as they were, and it still reconciles: an edit and a new one.
        const weekly = await admin.get(CONFIG_MAP, "weekly-backup", { namespace: "shared" });
        expect(weekly.data).toEqual({ message: "weekly from archive-operator" });
        await admin.patch(b.backup, "weekly", { spec: { message: "edited" } }, {
          namespace: "shared",
        });
        await admin.create(b.backup, {
          metadata: { name: "after", namespace: "shared" },
          spec: { message: "after" },
        });
        await eventually(async () => {
          expect((await admin.get(CONFIG_MAP, "weekly-backup", { namespace: "shared" })).data)
            .toEqual({ message: "edited" });
          expect((await admin.get(CONFIG_MAP, "after-backup", { namespace: "shared" })).data)
            .toEqual({ message: "after" });
        }, { timeoutMs: 60_000 });
        for (const name of [b.name, `${b.name}-metrics-auth`]) {
          await admin.get(CLUSTER_ROLE, name);
        }
      });
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      for (const operator of running) {
        operator.interrupt();
        const status = await operator.exited();
        if (failed || !status.success) console.error(operator.output().slice(-4000));
      }
      await plane?.stop({ keepLogs: failed });
      if (!failed) await Deno.remove(dir, { recursive: true });
      else console.error(`own operators kept in ${dir}`);
    }
  },
);
