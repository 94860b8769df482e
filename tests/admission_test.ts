/**
 * Admission reveals nothing and costs callers, not us, against the real operator (main.ts) and
 * API server: a review naming a Secret, a namespace or a node the requester cannot read gets the
 * same answer whether it exists or not, and the audit log shows no read of it; a requester who may
 * read them gets the warnings. Fifty clients posting reviews for 30 s cost the API server at most
 * admission's own budget (20 requests at once, 10 a second after that: `burst + qps·t`, counted
 * from the audit log), and the reconcilers meanwhile neither wait on their rate limiter nor fall
 * behind (Ptemplates made during the load converge). The latency of a reconcile under that load,
 * as a ratio to its baseline, is printed rather than asserted: it measures the machine as much as
 * the operator.
 */
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE } from "../crds/kmm_module.ts";
import { PTEMPLATE, PTEMPLATE_CRD } from "../crds/ptemplate.ts";
import type { Unstructured } from "../kube/object.ts";
import { DAEMON_SET, NAMESPACE, NODE, SECRET } from "../kube/kinds.ts";
import { ADMISSION_RATE_LIMIT } from "../runtime/manager/mod.ts";
import { createServingPki } from "../testing/control_plane_pki.ts";
import type { AuditEvent } from "../testing/audit_log.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";

const ADMISSION_AGENT = "ptemplate-operator/admission";
const ADMIN = { username: "kubernetes-admin", groups: ["system:masters", "system:authenticated"] };
/** Someone with no grant at all: they may read nothing the reviews name. */
const DEVELOPER = {
  username: "system:serviceaccount:tenant:developer",
  groups: ["system:serviceaccounts", "system:serviceaccounts:tenant", "system:authenticated"],
};

/** An AdmissionReview as the API server would send it for a new Ptemplate. */
function review(
  namespace: string,
  spec: Record<string, unknown>,
  userInfo?: Record<string, unknown>,
  uid = "review",
) {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid,
      operation: "CREATE",
      namespace,
      name: "probe",
      resource: { group: "pt.example.com", version: "v1alpha1", resource: "ptemplates" },
      kind: { group: "pt.example.com", version: "v1alpha1", kind: "Ptemplate" },
      object: {
        apiVersion: "pt.example.com/v1alpha1",
        kind: "Ptemplate",
        metadata: { name: "probe", namespace },
        spec: { selector: { role: "worker" }, ...spec },
      },
      ...(userInfo ? { userInfo } : {}),
    },
  };
}

await integrationTest("admission: no oracle, and a bounded cost", {
  audit: true,
  crds: [PTEMPLATE_CRD, KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  for (const name of ["tenant", "locked", "load"]) {
    await admin.create(NAMESPACE, {
      metadata: {
        name,
        labels: name === "locked" ? { "pod-security.kubernetes.io/enforce": "restricted" } : {},
      },
    });
  }
  await admin.create(SECRET, {
    metadata: { name: "real-secret", namespace: "kube-system" },
    data: { token: btoa("do not tell") },
  });
  await admin.create(NODE, { metadata: { name: "control-plane-7" }, spec: {} });
  const pki = await createServingPki();
  const certDir = await Deno.makeTempDir({ prefix: "admission-certs-" });
  const { cert, key } = await pki.issue();
  await Deno.writeTextFile(`${certDir}/tls.crt`, cert);
  await Deno.writeTextFile(`${certDir}/tls.key`, key);
  const operator = OperatorRun.start([
    `--kubeconfig=${plane.adminKubeconfigPath}`,
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
    "--webhook-bind-address=127.0.0.1:0",
    `--webhook-cert-dir=${certDir}`,
  ]);
  const client = Deno.createHttpClient({ caCerts: [pki.ca.cert] });
  const admissionRequests = async (since = "") =>
    (await plane.auditEvents()).filter((e: AuditEvent) =>
      e.userAgent === ADMISSION_AGENT && e.requestReceivedTimestamp >= since
    );
  try {
    const port = await operator.port("webhooks");
    const metricsPort = await operator.port("metrics");
    await eventually(async () =>
      expect((await fetch(`http://127.0.0.1:${await operator.port("probes")}/readyz`)).status)
        .toBe(200)
    );
    const post = async (body: unknown) => {
      const response = await fetch(`https://127.0.0.1:${port}/validate/status-aggregator`, {
        method: "POST",
        body: JSON.stringify(body),
        client,
      });
      expect(response.status).toBe(200);
      return (await response.json()).response;
    };

    await step(
      "another namespace's Secret: the same answer whether it exists, and no read of it",
      async () => {
        for (const requester of [undefined, DEVELOPER]) {
          const exists = await post(
            review("kube-system", { imageRepoSecret: { name: "real-secret" } }, requester),
          );
          const missing = await post(
            review("kube-system", { imageRepoSecret: { name: "no-such-secret" } }, requester),
          );
          expect(exists).toEqual(missing);
          expect(exists).toEqual({ uid: "review", allowed: true });
        }
        // The Pod Security level of a namespace the requester cannot read: not told either.
        const locked = await post(review("locked", {}, DEVELOPER));
        const open = await post(review("tenant", {}, DEVELOPER));
        expect(locked).toEqual(open);
        const reads = (await admissionRequests()).filter((e) => e.verb !== "create" // SubjectAccessReviews
        );
        expect(reads.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
      },
    );

    await step("node names are not looked at: the same answer, no read of nodes", async () => {
      for (const requester of [undefined, DEVELOPER, ADMIN]) {
        const there = await post(
          review(
            "tenant",
            { selector: { "kubernetes.io/hostname": "control-plane-7" } },
            requester,
          ),
        );
        const nowhere = await post(
          review("tenant", { selector: { "kubernetes.io/hostname": "no-such-node" } }, requester),
        );
        expect(there).toEqual(nowhere);
      }
      expect((await admissionRequests()).filter((e) => e.objectRef?.resource === "nodes"))
        .toEqual([]);
    });

    await step("a requester who may read them is told, as kubectl apply prints it", async () => {
      const answer = await post(
        review("locked", { imageRepoSecret: { name: "no-such-secret" } }, ADMIN),
      );
      expect(answer.warnings).toEqual([
        expect.stringContaining('namespace locked enforces Pod Security "restricted"'),
        expect.stringContaining('Secret "no-such-secret" does not exist in namespace locked'),
      ]);
      // Looked at through admission's own client, after asking whether the requester may.
      const requests = await admissionRequests();
      expect(requests.some((e) => e.objectRef?.resource === "subjectaccessreviews")).toBe(true);
      expect(requests.some((e) => e.objectRef?.resource === "secrets" && e.verb === "get"))
        .toBe(true);
    });

    await step("50 clients for 30 s: admission's requests stay in its budget", async () => {
      const scrapeWait = async () => {
        const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
        return [
          ...text.matchAll(/^rest_client_rate_limiter_duration_seconds_sum\{[^}]*\} (\S+)$/gm),
        ]
          .reduce((sum, m) => sum + Number(m[1]), 0);
      };
      const made = async (name: string) => {
        const started = performance.now();
        await admin.create(PTEMPLATE, {
          metadata: { name, namespace: "load" },
          spec: { selector: { role: "worker" } },
        } as Unstructured);
        // Its consumer DaemonSet (the status waits on purpose for the children's controllers,
        // which this control plane does not run).
        await eventually(
          () => admin.get(DAEMON_SET, `${name}-consumer`, { namespace: "load" }),
          { timeoutMs: 60_000, intervalMs: 20 },
        );
        return performance.now() - started;
      };
      const baseline = [await made("base-1"), await made("base-2"), await made("base-3")];
      const waitedBefore = await scrapeWait();
      await new Promise((resolve) => setTimeout(resolve, 1_100)); // a fresh second of budget
      const since = new Date().toISOString();
      const started = performance.now();
      const until = started + 30_000;
      const answered = { ok: 0, busy: 0 };
      const clients = Array.from({ length: 50 }, async (_, i) => {
        for (let n = 0; performance.now() < until; n++) {
          // Known requesters (whose SubjectAccessReviews are cached) and new ones (whose are
          // not), Secrets and namespaces: the costliest mix admission has.
          const requester = i % 2
            ? ADMIN
            : { username: `user-${i}-${n}`, groups: ["system:authenticated"] };
          const response = await fetch(`https://127.0.0.1:${port}/validate/status-aggregator`, {
            method: "POST",
            body: JSON.stringify(
              review(
                i % 3 ? "tenant" : "locked",
                {
                  imageRepoSecret: { name: `secret-${n % 7}` },
                },
                requester,
                `load-${i}-${n}`,
              ),
            ),
            client,
          });
          await response.body?.cancel();
          if (response.status === 200) answered.ok++;
          else {
            // Turned away (503, Retry-After): a moment's pause, as a client that listens would.
            answered.busy++;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
      });
      // Reconciles meanwhile, one after another.
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      const during = [await made("during-1"), await made("during-2"), await made("during-3")];
      // Every Ptemplate made converges (its status written), load or not.
      for (const name of ["base-1", "during-1", "during-3"]) {
        await eventually(async () => {
          const pt = await admin.get(PTEMPLATE, name, {
            namespace: "load",
          });
          expect(pt.status?.observedGeneration).toBe(1);
        });
      }
      await Promise.all(clients);
      const seconds = (performance.now() - started) / 1000;
      const sent = (await admissionRequests(since)).length;
      // The budget's own bound; 0.2 s more for where the audit log's and our clocks start.
      const bound = ADMISSION_RATE_LIMIT.burst +
        Math.ceil(ADMISSION_RATE_LIMIT.qps * (seconds + 0.2));
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[1];
      console.log(
        `${answered.ok} reviews answered (${answered.busy} turned away) in ${
          seconds.toFixed(1)
        } s; ` +
          `admission sent ${sent} requests to the API server (bound ${bound}); a reconcile took ` +
          `${median(during).toFixed(0)} ms under load, ${median(baseline).toFixed(0)} ms before ` +
          `(${(median(during) / median(baseline)).toFixed(2)}×)`,
      );
      // Reviews keep being answered throughout (how many depends on the machine's load), and the
      // rest are turned away, never left hanging.
      expect(answered.ok).toBeGreaterThan(50);
      expect(sent).toBeGreaterThan(0);
      expect(sent).toBeLessThanOrEqual(bound);
      // The reconcilers' own rate limiter never held them back for admission's sake.
      expect(await scrapeWait() - waitedBefore).toBeLessThan(1);
    });
  } finally {
    client.close();
    expect((await operator.stop()).code).toBe(0);
    await Deno.remove(certDir, { recursive: true });
  }
});
