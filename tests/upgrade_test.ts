/**
 * Upgrades and rollbacks in place, as a cluster admin does them. The previous release (0.2, from
 * this repository's history, run with its own deno.json and lock) is installed as its README says
 * and converges over 38 varied Ptemplates, 4 more that it let in and this version's rules refuse,
 * and some Guests (whose finalizer is 0.2's); then this version is installed as docs/guides/upgrading.md
 * says and takes over by a rolling update (started beside the leader, which is stopped and
 * releases the Lease), 0.2 comes back by a kill (the leader SIGKILLed, the other takes over after
 * the lease duration), this version again by a kill, and 0.2 again by a rolling update. Objects
 * are edited, made and deleted throughout; the 4 stale ones and children 0.2 made are labelled,
 * patched, applied again, freed of a finalizer and deleted in the foreground.
 *
 * After each change of version, from the API server's audit log (the two versions told apart by
 * the pod their tokens are bound to): no write to a child whose desired state did not change, at
 * most one per child that did (plus, once in a child's life, the relabelling of its create entry),
 * none to a Ptemplate or Guest nobody changed, none of another kind, no write by a replica before
 * it leads, no refused write; and from the cluster: no child refused or taken for someone else's,
 * no duplicate, every finalizer of the other version honoured, edits and deletes done within
 * seconds, nothing of the other version left behind that docs/guides/upgrading.md does not name.
 */
import { expect } from "expect";
import { parseAllDocuments } from "yaml";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import { policyResource } from "../kube/empty_value_policy.ts";
import * as kinds from "../kube/kinds.ts";
import type { Unstructured } from "../kube/object.ts";
import type { Resource } from "../kube/resource.ts";
import { GUEST, guestbookPlugin } from "../plugins/guestbook/mod.ts";
import { PTEMPLATE_OPERATOR } from "../runtime/identity/mod.ts";
import { finalizerOf } from "../runtime/reconcile/mod.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { documented, runDocumented } from "./fixtures/documented_commands.ts";
import { kubectl as runKubectl, kubectlOk } from "./fixtures/kubectl.ts";
import { deploymentArgs } from "./fixtures/manifests.ts";
import { OperatorRun, spawnOperator } from "./fixtures/operator_command.ts";
import { writesOf } from "./fixtures/operator_writes.ts";
import { checkoutRelease } from "./fixtures/previous_release.ts";
import { VersionChange } from "./fixtures/version_change.ts";
import {
  expectFleetConverged,
  FLEET_NAMESPACES,
  FLEET_NODES,
  fleetPtemplates,
  guest,
  newPtemplate,
  STALE_PTEMPLATES,
} from "./fixtures/upgrade_fleet.ts";

const PREVIOUS = { version: "0.2", commit: "34e657f6859c40b182bf067a9df23b64bd0badea" };
const SYSTEM = "ptemplate-operator-system";
const SA = `system:serviceaccount:${SYSTEM}:ptemplate-operator`;
/** Who the test's admin client and kubectl are (testing/control_plane_pki.ts). */
const ADMIN = "ptemplate-admin";
const LEASE = PTEMPLATE_OPERATOR.leaseName;
const ROOT = new URL("../", import.meta.url).pathname;
/** Both versions run the guestbook beside the Ptemplate plugins: its finalizers cross versions. */
const PLUGINS = "--plugins=+guestbook";
/** Requests that ask the API server something and change nothing. */
const REVIEWS = new Set([
  "tokenreviews",
  "subjectaccessreviews",
  "selfsubjectaccessreviews",
  "selfsubjectreviews",
]);
/**
 * The guestbook's finalizer as 0.2 named it, as this version does (the same, so that a rollback
 * finalizes what this version finalized), and as builds between them did.
 */
const FINALIZER_0_2 = "operator.pt.example.com/guestbook";
const FINALIZER_NOW = finalizerOf(guestbookPlugin, PTEMPLATE_OPERATOR);
const FINALIZER_BETWEEN = "operator.ptemplate.dev/guestbook";
/** Which each version puts on a Guest, among all that were ever ours. */
const FINALIZERS = {
  "0.2": { ours: [FINALIZER_0_2], any: [FINALIZER_0_2, FINALIZER_BETWEEN] },
  now: { ours: [FINALIZER_NOW], any: [FINALIZER_0_2, FINALIZER_BETWEEN] },
};
/** What a child refused, or taken for someone else's, or fought over, is reported as. */
const TROUBLE = [
  "ChildRefused",
  "ChildOwnedElsewhere",
  "ChildNameTaken",
  "WriteLoopDetected",
  "ForeignFieldsRemoved",
  "FinalizeFailed",
];
/**
 * What a rollback to 0.2 leaves of this version (0.2's manifests do not name them, so
 * `kubectl apply` does not remove them); docs/guides/upgrading.md must name each one and say why.
 */
const LEFT_BY_ROLLBACK = [
  "ClusterRole/ptemplate-operator-metrics-auth",
  "ClusterRole/ptemplate-operator-metrics-reader",
  "ClusterRoleBinding/ptemplate-operator-metrics-auth",
  "NetworkPolicy/ptemplate-operator-metrics",
  "ValidatingAdmissionPolicy/ptemplate-operator-leader-fence",
  "ValidatingAdmissionPolicy/ptemplates.pt.example.com-no-empty-values",
  "ValidatingAdmissionPolicyBinding/ptemplate-operator-leader-fence",
  "ValidatingAdmissionPolicyBinding/ptemplates.pt.example.com-no-empty-values",
];

const release = await checkoutRelease(PREVIOUS.version, PREVIOUS.commit);
// Removed when the module exits, whether its test ran or was skipped.
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(release.dir, { recursive: true });
  } catch {
    // already gone
  }
});
console.log(
  `release ${release.version} checked out in ${Math.round(release.tookMs.files)} ms, its npm ` +
    `packages ready in ${Math.round(release.tookMs.packages)} ms`,
);

/** A version of the operator: where its files are, and whether it is a checkout of another. */
interface Version {
  name: "0.2" | "now";
  dir: string;
  checkout?: string;
}
const V02: Version = { name: "0.2", dir: release.dir, checkout: release.dir };
const NOW: Version = { name: "now", dir: ROOT };

/** One replica of the operator: its process, the pod its token is bound to, its Lease identity. */
interface Replica {
  version: Version;
  pod: string;
  run: OperatorRun;
  identity: string;
}

/** What this version's pods' names begin with. */
const NOW_POD = "ptemplate-operator-now-";
/**
 * 0.2 names its Lease identity after the host (in a pod, the pod's name): its token is bound to a
 * pod of the host's name, as a kubelet's would be, so that the leader fence lets its writes through.
 * A host name no pod could have runs it with an unbound token (the fence then does not judge it).
 */
const HOST = Deno.hostname();
const OLD_POD = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(HOST) &&
    HOST.length <= 63
  ? HOST
  : "";

/** Which objects of ours a version's install makes: `Kind/name`. */
type Names = Set<string>;

/** Every CEL rule in a CRD's spec, sorted: which version's rules are in force. */
function rules(value: unknown): string[] {
  if (!value || typeof value !== "object") return [];
  const own = (value as { "x-kubernetes-validations"?: { rule: string }[] })[
    "x-kubernetes-validations"
  ]?.map((v) => v.rule) ?? [];
  return [...own, ...Object.values(value).flatMap(rules)].sort();
}

/** The kinds of ours whose leftovers are looked for, and where. */
const OURS: { resource: Resource; namespace?: string }[] = [
  { resource: kinds.CLUSTER_ROLE },
  { resource: kinds.CLUSTER_ROLE_BINDING },
  { resource: kinds.ROLE, namespace: SYSTEM },
  { resource: kinds.ROLE_BINDING, namespace: SYSTEM },
  { resource: kinds.NETWORK_POLICY, namespace: SYSTEM },
  { resource: kinds.SERVICE, namespace: SYSTEM },
  { resource: kinds.VALIDATING_WEBHOOK_CONFIGURATION },
  { resource: kinds.MUTATING_WEBHOOK_CONFIGURATION },
  { resource: policyResource({ kind: "ValidatingAdmissionPolicy" })! },
  { resource: policyResource({ kind: "ValidatingAdmissionPolicyBinding" })! },
];

await integrationTest("upgrade from 0.2 and rollback, in place, by rolling update and by kill", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
  audit: true,
  // The garbage collector learns kinds at start: give it 0.2's, then hand them to 0.2's install.
  crds: [
    KMM_MODULE_CRD_FILE,
    `${release.dir}/crds/ptemplates.pt.example.com.yaml`,
    `${release.dir}/crds/guests.example.ptemplate.dev.yaml`,
  ],
}, async (plane, runStep) => {
  // Each step starts where the last one left the cluster: after a failure, the rest cannot pass.
  let failed = false;
  const step = async (name: string, fn: () => Promise<void>) => {
    if (failed) return;
    failed = !(await runStep(name, fn));
  };
  const admin = plane.client();
  const kubectl = (args: string[], options: { cwd?: string; stdin?: string } = {}) =>
    kubectlOk(plane.binaries.kubectl, plane.adminKubeconfigPath, args, options);
  const replicas: Replica[] = [];

  /** `main.ts <args>` of a version, as its README has it run. */
  const commandRun = async (version: Version, args: string[]) => {
    const out = await spawnOperator(args, { checkout: version.checkout }).output();
    const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
  };
  /** The same, throwing unless it exits 0; what it printed. */
  const command = async (version: Version, args: string[]) => {
    const out = await commandRun(version, args);
    if (out.code !== 0) {
      throw new Error(`${version.name}: ${args.join(" ")} exited ${out.code}: ${out.stderr}`);
    }
    return out.stdout;
  };

  /**
   * Installs a version as its docs say: its CRDs and policies (`install`), `kubectl apply -k
   * deploy`, and the RBAC `rbac` prints for the plugins it runs. Returns what that made of ours.
   */
  const install = async (version: Version): Promise<Names> => {
    await command(version, ["install", `--kubeconfig=${plane.adminKubeconfigPath}`, PLUGINS]);
    await kubectl(["apply", "-k", "deploy"], { cwd: version.dir });
    const rbac = await command(version, ["rbac", PLUGINS]);
    await kubectl(["apply", "-n", SYSTEM, "-f", "-"], { stdin: rbac, cwd: version.dir });
    const rendered = await kubectl(["kustomize", "deploy"], { cwd: version.dir });
    const crds = [
      "ptemplates.pt.example.com.yaml",
      "guests.example.ptemplate.dev.yaml",
    ].map((file) => Deno.readTextFileSync(`${version.dir}/crds/${file}`));
    return new Set(
      [rendered.stdout, rbac, ...crds].flatMap((text) =>
        parseAllDocuments(text).map((d) => d.toJS() as Unstructured)
      ).filter(Boolean).map((o) => `${o.kind}/${o.metadata?.name}`),
    );
  };

  /** Starts a replica of `version` as a pod of the Deployment would run; resolves once it campaigns. */
  const startReplica = async (version: Version, pod: string): Promise<Replica> => {
    const identity = await plane.serviceAccountIdentity(
      SYSTEM,
      "ptemplate-operator",
      pod ? { pod } : {},
    );
    const rendered = await kubectl(["kustomize", "deploy"], { cwd: version.dir });
    const args = deploymentArgs(parseAllDocuments(rendered.stdout).map((d) => d.toJS()))
      .filter((a) => !/bind-address|log-format/.test(a));
    const run = OperatorRun.start([
      ...args,
      `--kubeconfig=${identity.kubeconfigPath}`,
      "--metrics-bind-address=127.0.0.1:0",
      "--health-probe-bind-address=127.0.0.1:0",
      PLUGINS,
    ], { checkout: version.checkout, env: { POD_NAME: pod } });
    const replica = { version, pod, run, identity: "" };
    replicas.push(replica);
    replica.identity = await eventually(() => {
      const line = run.lines.find((l) => l.msg.startsWith("campaigning for lease"));
      if (!line) throw new Error(`${version.name} never campaigned: ${JSON.stringify(run.lines)}`);
      return line.identity as string;
    }, { timeoutMs: 60_000 });
    return replica;
  };

  /** When `replica` holds the Lease (resolves as soon as it does). */
  const leading = async (replica: Replica, timeoutMs = 60_000) => {
    await eventually(async () => {
      const lease = await admin.get(kinds.LEASE, LEASE, { namespace: SYSTEM });
      expect(lease.spec?.holderIdentity).toBe(replica.identity);
    }, { timeoutMs, intervalMs: 20 });
    return Date.now();
  };

  /** Resolves once the operator has written nothing for 3 s (Lease renewals aside). */
  const quiet = () =>
    eventually(async () => {
      const last = writesOf(await plane.auditEvents(), SA, 0).at(-1)?.at ?? 0;
      expect(Date.now() - last).toBeGreaterThan(3_000);
    }, { timeoutMs: 90_000, intervalMs: 500 });

  const converged = (version: Version) =>
    eventually(() => expectFleetConverged(admin, FINALIZERS[version.name]), {
      timeoutMs: 90_000,
      intervalMs: 250,
    });

  /** Our objects in the cluster (`Kind/name`), beyond the CRDs. */
  const ours = async (): Promise<string[]> => {
    const found: string[] = [];
    for (const { resource, namespace } of OURS) {
      for (const o of (await admin.list(resource, { namespace })).items) {
        const name = o.metadata?.name ?? "";
        if (name.startsWith("ptemplate")) found.push(`${resource.kind}/${name}`);
      }
    }
    return found.sort();
  };

  /**
   * Installs `version` as its docs say and hands over to a replica of it from `from`: started
   * beside the leader, which is then stopped (`SIGTERM`: it releases the Lease) or killed
   * (`SIGKILL`: the Lease runs out). `meanwhile` runs while the old one still leads, `gap` right
   * after the signal, `after` once the new one leads.
   */
  const handOver = async (
    change: VersionChange,
    from: Replica,
    to: { version: Version; pod: string; signal: "SIGTERM" | "SIGKILL" },
    changes: {
      meanwhile?: () => Promise<void>;
      gap?: () => Promise<void>;
      after?: () => Promise<void>;
    },
  ): Promise<{ next: Replica; installed: Names }> => {
    const installed = await install(to.version);
    const next = await startReplica(to.version, to.pod);
    await changes.meanwhile?.();
    // The old leader still leads, and does what was asked of it, with the new CRDs, RBAC and
    // policies in place; the new replica waits.
    await converged(from.version);
    change.signalledAt = Date.now();
    const stopped = from.run.stop(to.signal);
    await changes.gap?.();
    await leading(next);
    const lease = await admin.get(kinds.LEASE, LEASE, { namespace: SYSTEM });
    change.acquiredAt = Date.parse(lease.spec!.acquireTime!);
    const status = await stopped;
    if (to.signal === "SIGTERM") expect(status.code).toBe(0);
    await changes.after?.();
    return { next, installed };
  };

  /** Checks a change's writes, and says its figures. */
  const judge = async (change: VersionChange, next: Replica) => {
    const events = await plane.auditEvents();
    const writes = writesOf(events, SA, change.start).filter((w) => !REVIEWS.has(w.resource));
    console.log(change.judge(writes, {
      next: next.pod,
      current: (pod) => pod.startsWith(NOW_POD),
      people: writesOf(events, ADMIN, change.start),
    }));
  };

  /**
   * What neither version should ever report, and nothing of ours the installed version does not
   * make but `leftovers` (what docs/guides/upgrading.md says a rollback leaves).
   */
  /** A command of docs/guides/upgrading.md, as written, as the test's admin. */
  const asAdmin = async (command: string) => {
    const result = await runDocumented(command, {
      kubectl: plane.binaries.kubectl,
      env: { KUBECONFIG: plane.adminKubeconfigPath },
    });
    // kubectl says "No resources found" on stderr for an empty list: the exit code judges.
    expect({ command, code: result.code, stderr: result.stderr }).toEqual({
      command,
      code: 0,
      stderr: result.code === 0 ? result.stderr : "",
    });
    return result.stdout;
  };

  const clean = async (version: Version, installed: Names, leftovers: string[] = []) => {
    for (const namespace of FLEET_NAMESPACES) {
      const events = (await admin.list(kinds.EVENT, { namespace })).items
        .filter((e) => TROUBLE.includes(e.reason ?? ""))
        .map((e) => `${e.involvedObject.name}: ${e.reason}: ${e.message}`);
      expect({ namespace, events }).toEqual({ namespace, events: [] });
      const conditions = (await admin.list(PTEMPLATE, { namespace })).items.flatMap((pt) =>
        (pt.status?.conditions ?? []).filter((c) => TROUBLE.includes(c.reason))
          .map((c) => `${pt.metadata.name}: ${c.type} ${c.reason}`)
      );
      expect({ namespace, conditions }).toEqual({ namespace, conditions: [] });
      // The runtime's own labels and annotations on children: only the two both versions use.
      for (const resource of [MODULE, kinds.DAEMON_SET] as Resource[]) {
        for (const child of (await admin.list(resource, { namespace })).items) {
          const keys = [
            ...Object.keys(child.metadata?.labels ?? {}),
            ...Object.keys(child.metadata?.annotations ?? {}),
          ].filter((k) => /^operator\./.test(k));
          expect(keys.sort()).toEqual([
            PTEMPLATE_OPERATOR.hashAnnotation,
            PTEMPLATE_OPERATOR.pluginLabel,
          ]);
        }
      }
    }
    // One Lease, the one both versions contend for.
    const leases = (await admin.list(kinds.LEASE, {})).items
      .filter((l) => /ptemplate/.test(l.metadata?.name ?? ""))
      .map((l) => `${l.metadata?.namespace}/${l.metadata?.name}`);
    expect(leases).toEqual([`${SYSTEM}/${LEASE}`]);
    // Nothing of ours the version's install does not make, but what the docs say a rollback
    // leaves (and why).
    const left = (await ours()).filter((o) => !installed.has(o));
    expect(left).toEqual(leftovers);
    const docs = Deno.readTextFileSync(`${ROOT}/docs/guides/upgrading.md`);
    for (const o of left) {
      expect({ documented: o, in: docs.includes(o.split("/")[1]) }).toEqual({
        documented: o,
        in: true,
      });
    }
    // The CRD's rules are the version's own, none of the other's.
    const file = parseAllDocuments(
      Deno.readTextFileSync(`${version.dir}/crds/ptemplates.pt.example.com.yaml`),
    ).map((d) => d.toJS()).find((o) => o?.kind === "CustomResourceDefinition");
    const live = await admin.get(kinds.CUSTOM_RESOURCE_DEFINITION, "ptemplates.pt.example.com");
    expect(rules(live.spec)).toEqual(rules(file.spec));
  };

  /**
   * Under this version's rules, the Ptemplates 0.2 stored that those rules refuse, and children 0.2
   * made, are labelled, annotated, patched, applied again, freed of a finalizer and deleted in the
   * foreground, as people and the garbage collector do: each succeeds. A new object like each
   * stale one is refused, so they are stale indeed.
   */
  const staleObjectsStayWritable = async (change: VersionChange) => {
    for (const stale of STALE_PTEMPLATES) {
      const copy = stale.manifest.replace(`name: ${stale.name}`, `name: copy-${stale.name}`);
      const out = await runKubectl(
        plane.binaries.kubectl,
        plane.adminKubeconfigPath,
        ["apply", "--dry-run=server", "-f", "-"],
        { stdin: copy },
      );
      expect({ copy: stale.name, code: out.code, refused: out.stderr.includes(stale.breaks) })
        .toEqual({ copy: stale.name, code: 1, refused: true });
    }
    const [noValue, digest, imageId, longPath] = STALE_PTEMPLATES;
    const ns = (p: typeof noValue) => ["-n", p.namespace];
    await change.touchMetadata(["label", ...ns(noValue), "ptemplate", noValue.name, "team=a"]);
    await change.touchMetadata([
      "annotate",
      ...ns(noValue),
      "ptemplate",
      noValue.name,
      "example.com/reviewed=yes",
    ]);
    // Applied again, the key without a value still in it: only what changed is judged.
    await change.editByKubectl(
      noValue.namespace,
      noValue.name,
      ["apply", "-f", "-"],
      noValue.manifest.replace("maxdev: 4", "maxdev: 6"),
    );
    await change.editByKubectl(imageId.namespace, imageId.name, [
      "patch",
      ...ns(imageId),
      "ptemplate",
      imageId.name,
      "--type=merge",
      "-p",
      '{"spec":{"requiredDevices":2}}',
    ]);
    // Deleted in the foreground: the garbage collector removes its finalizer once the children
    // are gone. Held by a third party: that one removes its finalizer (see `release`).
    await change.remove(longPath.namespace, longPath.name, "foreground");
    await change.remove(digest.namespace, digest.name);
    // Children 0.2 made, labelled by someone else: not the operator's business.
    await change.touchMetadata(["label", "-n", "team-a", "daemonset", "pt-16-consumer", "team=a"]);
    await change.touchMetadata([
      "annotate",
      "-n",
      "team-a",
      "modules.kmm.sigs.x-k8s.io",
      "pt-16",
      "example.com/reviewed=yes",
    ]);
  };

  let leader: Replica | undefined;
  let installed: Names = new Set();
  try {
    await step(
      "0.2, installed as its README says, converges over 42 Ptemplates (4 that this version's " +
        "rules refuse) and 8 Guests",
      async () => {
        await plane.createNodes(...FLEET_NODES);
        for (const name of FLEET_NAMESPACES) {
          await admin.create(kinds.NAMESPACE, { metadata: { name } });
        }
        installed = await install(V02);
        // The harness installed 0.2's CRDs before the garbage collector started: now that 0.2's
        // install has applied them too, they are its alone, as on a cluster where it was first.
        for (const name of ["ptemplates.pt.example.com", "guests.example.ptemplate.dev"]) {
          await admin.apply(kinds.CUSTOM_RESOURCE_DEFINITION, {
            apiVersion: "apiextensions.k8s.io/v1",
            kind: "CustomResourceDefinition",
            metadata: { name },
          }, { fieldManager: "ptemplate-testing", force: true });
        }
        leader = await startReplica(V02, OLD_POD);
        await leading(leader);
        for (const pt of fleetPtemplates(38)) await admin.create(PTEMPLATE, pt as never);
        // As a user stores them: 0.2's rules let each in.
        for (const stale of STALE_PTEMPLATES) {
          await kubectl(["apply", "-f", "-"], { stdin: stale.manifest });
        }
        for (let i = 0; i < 8; i++) {
          await admin.create(GUEST, guest(FLEET_NAMESPACES[i % 2], `g-${i}`) as never);
        }
        await converged(V02);
        await quiet();
        await clean(V02, installed);
      },
    );

    await step(
      "this version's check and dry run over 0.2's cluster: the 4 named, nothing to change",
      async () => {
        const check = await commandRun(NOW, [
          "check",
          `--kubeconfig=${plane.adminKubeconfigPath}`,
          PLUGINS,
        ]);
        // (Its stderr, shown if it fails, is Deno's downloads when the cache is cold.)
        expect({ code: check.code, stderr: check.stderr }).toMatchObject({ code: 1 });
        const findings = check.stdout.split("\n").filter((l) => l.startsWith("Ptemplate "));
        expect(findings.map((l) => l.slice(0, l.indexOf(": "))).sort()).toEqual(
          STALE_PTEMPLATES.map((p) => `Ptemplate ${p.namespace}/${p.name}`).sort(),
        );
        for (const p of STALE_PTEMPLATES) {
          const subject = `Ptemplate ${p.namespace}/${p.name}: `;
          expect(findings.find((l) => l.startsWith(subject))).toContain(p.breaks);
        }
        expect(check.stdout).toContain("Ptemplate: 4 of 42 stored object(s) break rules");
        const report = JSON.parse(
          await command(NOW, [
            "run",
            "--dry-run",
            "--dry-run-output=json",
            `--kubeconfig=${plane.adminKubeconfigPath}`,
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
            "--log-format=json",
            PLUGINS,
          ]),
        );
        expect(report.objects).toEqual([]);
      },
    );

    await step("upgrade by rolling update: started beside 0.2, which is stopped", async () => {
      const change = await VersionChange.begin(admin, kubectl, "upgrade, rolling");
      ({ next: leader, installed } = await handOver(change, leader!, {
        version: NOW,
        pod: `${NOW_POD}a`,
        signal: "SIGTERM",
      }, {
        meanwhile: async () => {
          await change.edit("team-b", "pt-01", {
            consumerimage: "registry.example.com/team/consumer:v1-edited",
          });
          await change.remove("team-a", "pt-02");
          await change.create(newPtemplate("t1", 1));
          await change.deleteGuest("team-a", "g-0");
        },
        after: async () => {
          await change.edit("team-b", "pt-03", { maxdev: 7 });
          await change.edit("team-b", "pt-05", {
            selector: { "topology.kubernetes.io/zone": "zone-a" },
          });
          await change.remove("team-a", "pt-04");
          await change.addGuest("team-a", "g-t1");
          await change.deleteGuest("team-b", "g-1");
          await staleObjectsStayWritable(change);
        },
      }));
      await change.gone();
      await converged(NOW);
      await change.release("team-a", "pt-04");
      await change.release("team-b", "stale-digest");
      await change.gone();
      await converged(NOW);
      await quiet();
      await judge(change, leader);
      await clean(NOW, installed);
      // What the guide says to check after an upgrade, as written: a new pod leads, nothing is
      // refused or fought over, and the Ptemplates are listed.
      const holder = await asAdmin(
        documented(
          "kubectl -n ptemplate-operator-system get lease ptemplate-operator.pt.example.com -o jsonpath='{.spec.holderIdentity}{\"\\n\"}'",
        ),
      );
      expect(holder.trim().startsWith(`${NOW_POD}a`)).toBe(true);
      const warnings = await asAdmin(
        documented("kubectl get events -A --field-selector type=Warning"),
      );
      expect(warnings.split("\n").filter((line) => TROUBLE.some((r) => line.includes(r))))
        .toEqual([]);
      expect(await asAdmin(documented("kubectl get pt -A"))).toContain("pt-01");
    });

    await step("rollback by kill: 0.2 started beside this version, which is killed", async () => {
      const change = await VersionChange.begin(admin, kubectl, "rollback, kill");
      ({ next: leader, installed } = await handOver(change, leader!, {
        version: V02,
        pod: OLD_POD,
        signal: "SIGKILL",
      }, {
        gap: async () => {
          await change.edit("team-a", "pt-06", { defaultmsg: "msg-6.v2" });
          await change.remove("team-b", "pt-07");
          await change.create(newPtemplate("t2", 2));
        },
        after: async () => {
          await change.edit("team-a", "pt-08", { requiredDevices: 3 });
          // Made and finalized by this version: 0.2 must finalize it.
          await change.deleteGuest("team-a", "g-t1");
          await change.addGuest("team-b", "g-t2");
          await change.remove("team-b", "pt-13");
        },
      }));
      await change.gone();
      await converged(V02);
      await change.release("team-b", "pt-13");
      await change.gone();
      await converged(V02);
      await quiet();
      await judge(change, leader);
      await clean(V02, installed, LEFT_BY_ROLLBACK);
    });

    await step("upgrade by kill: started beside 0.2, which is killed", async () => {
      const change = await VersionChange.begin(admin, kubectl, "upgrade, kill");
      ({ next: leader, installed } = await handOver(change, leader!, {
        version: NOW,
        pod: `${NOW_POD}b`,
        signal: "SIGKILL",
      }, {
        gap: async () => {
          // The other spelling of the same image: the spec changes, its children do not.
          await change.edit("team-b", "pt-09", {
            consumerimage: null,
            consumer: "registry.example.com/team/consumer:v9",
          });
          await change.edit("team-a", "pt-10", {
            consumer: "registry.example.com/team/consumer:v10-edited",
          });
        },
        after: async () => {
          await change.deleteGuest("team-b", "g-t2");
          await change.edit("team-a", "pt-12", {
            imageRepoSecret: null,
            imagePullSecret: { name: "pull-12" },
          });
          await change.create(newPtemplate("t3", 3));
          await change.addGuest("team-a", "g-t3");
        },
      }));
      await change.gone();
      await converged(NOW);
      await quiet();
      await judge(change, leader);
      await clean(NOW, installed);
    });

    await step(
      "rollback by rolling update: 0.2 started beside this version, which is stopped",
      async () => {
        const change = await VersionChange.begin(admin, kubectl, "rollback, rolling");
        ({ next: leader, installed } = await handOver(change, leader!, {
          version: V02,
          pod: OLD_POD,
          signal: "SIGTERM",
        }, {
          meanwhile: async () => {
            await change.edit("team-b", "pt-11", { maxdev: 3 });
            await change.deleteGuest("team-b", "g-3");
          },
          after: async () => {
            await change.remove("team-b", "new-t3");
            await change.deleteGuest("team-a", "g-t3");
            await change.edit("team-a", "pt-14", {
              selector: { "example.com/nowhere": null, "example.com/accelerator": "pt-card" },
            });
            await change.remove("team-a", "pt-22");
            // Under 0.2 again, with this version's empty-value policy left in place: the stale
            // Ptemplate this version applied is labelled and deleted in the foreground.
            const [noValue, , imageId] = STALE_PTEMPLATES;
            await change.touchMetadata([
              "label",
              "-n",
              imageId.namespace,
              "ptemplate",
              imageId.name,
              "team=a",
            ]);
            await change.remove(noValue.namespace, noValue.name, "foreground");
          },
        }));
        await change.gone();
        await converged(V02);
        await change.release("team-a", "pt-22");
        await change.gone();
        await converged(V02);
        await quiet();
        await judge(change, leader);
        await clean(V02, installed, LEFT_BY_ROLLBACK);
        // The guide's commands for what a rollback leaves unused, as written; 0.2 goes on.
        await asAdmin(
          documented("kubectl delete clusterrolebinding ptemplate-operator-metrics-auth"),
        );
        await asAdmin(
          documented(
            "kubectl delete clusterrole ptemplate-operator-metrics-auth ptemplate-operator-metrics-reader",
          ),
        );
        await asAdmin(
          documented(
            "kubectl -n ptemplate-operator-system delete networkpolicy ptemplate-operator-metrics",
          ),
        );
        expect((await ours()).filter((o) => !installed.has(o))).toEqual(
          LEFT_BY_ROLLBACK.filter((o) => !/metrics/.test(o)),
        );
      },
    );

    await step(
      "0.2, after it all, deletes every Guest, whichever version finalized it",
      async () => {
        const change = await VersionChange.begin(admin, kubectl, "the end");
        for (const namespace of FLEET_NAMESPACES) {
          for (const g of (await admin.list(GUEST, { namespace })).items) {
            await change.deleteGuest(namespace, g.metadata.name);
          }
        }
        await change.gone();
        await converged(V02);
        expect((await leader!.run.stop()).code).toBe(0);
      },
    );
  } finally {
    for (const replica of replicas) await replica.run.stop("SIGKILL");
  }
});
