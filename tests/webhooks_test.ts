/**
 * Webhooks from the operator, called by the real API server on loopback: admission warnings that
 * `kubectl apply` prints, v1beta1 through the conversion webhook, a certificate rotation that no
 * request notices, and what a stopped operator costs (failurePolicy Ignore: nothing but warnings).
 */
import { expect } from "expect";
import { PTEMPLATE_CONVERSION } from "../cli/plugin_loading/plugin_catalog.ts";
import { webhookConfigurations } from "../cli/manifests/webhook_manifests.ts";
import { KMM_MODULE_CRD_FILE } from "../crds/kmm_module.ts";
import {
  PTEMPLATE,
  type Ptemplate,
  PTEMPLATE_CRD,
  PTEMPLATE_V1BETA1,
  ptemplateCrdWithConversion,
} from "../crds/ptemplate.ts";
import { KubeClient } from "../kube/client.ts";
import { isApiError } from "../kube/errors.ts";
import type { Unstructured } from "../kube/object.ts";
import {
  CONFIG_MAP,
  CUSTOM_RESOURCE_DEFINITION,
  DAEMON_SET,
  NAMESPACE,
  SECRET,
  VALIDATING_WEBHOOK_CONFIGURATION,
} from "../kube/kinds.ts";
import { PTEMPLATE_PLUGINS } from "../reconcilers/mod.ts";
import { certificateFromDir, log } from "../runtime/observe/mod.ts";
import { selfManagedCertificate } from "../runtime/certificates/mod.ts";
import { createServingPki } from "../testing/control_plane_pki.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { runManager } from "../testing/running_manager.ts";
import { sleep } from "../util/sleep.ts";
import { kubectlCacheEnv } from "./fixtures/kubectl.ts";

const WORKER = { "node-role.kubernetes.io/worker": "worker" };

await integrationTest("webhooks: warnings, conversion, rotation, and a stopped operator", {
  controllerManager: true,
  kwok: true,
  crds: [PTEMPLATE_CRD, KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  await plane.createNodes({ name: "worker-1", labels: WORKER });
  const pki = await createServingPki();
  const certDir = await Deno.makeTempDir({ prefix: "webhook-certs-" });
  const writeCert = async () => {
    const { cert, key } = await pki.issue();
    // As a kubelet updates a mounted Secret: the new files appear at once.
    await Deno.writeTextFile(`${certDir}/tls.key.new`, key);
    await Deno.writeTextFile(`${certDir}/tls.crt.new`, cert);
    await Deno.rename(`${certDir}/tls.key.new`, `${certDir}/tls.key`);
    await Deno.rename(`${certDir}/tls.crt.new`, `${certDir}/tls.crt`);
    return cert;
  };
  await writeCert();

  const { manager, stop: stopOperator } = runManager(plane.adminConfig, {
    userAgent: "webhooks-test-operator",
    plugins: PTEMPLATE_PLUGINS,
    webhooks: {
      bind: { hostname: "127.0.0.1", port: 0 },
      certificate: certificateFromDir(certDir),
      conversions: [PTEMPLATE_CONVERSION],
      reloadMs: 200,
    },
    healthBind: { hostname: "127.0.0.1", port: 0 },
  });

  const kubectl = async (stdin: string, ...args: string[]) => {
    const child = new Deno.Command(plane.binaries.kubectl, {
      env: kubectlCacheEnv(plane.adminKubeconfigPath),
      args: ["--kubeconfig", plane.adminKubeconfigPath, ...args],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
    const out = await child.output();
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
  };
  const ptYaml = (namespace: string, name: string, extra = "") =>
    `apiVersion: pt.example.com/v1alpha1\nkind: Ptemplate\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\n` +
    `spec:\n  selector:\n    node-role.kubernetes.io/worker: worker\n${extra}`;

  try {
    await step("the webhooks are served, and /readyz says so", async () => {
      await eventually(() => expect(manager.endpoints.webhookPort).toBeGreaterThan(0));
      const port = manager.endpoints.webhookPort!;
      const url = (path: string) => ({
        url: `https://127.0.0.1:${port}${path}`,
        caBundle: btoa(pki.ca.cert),
      });
      for (const config of webhookConfigurations(PTEMPLATE_PLUGINS, url)) {
        await admin.apply(VALIDATING_WEBHOOK_CONFIGURATION, config, {
          fieldManager: "test",
          force: true,
        });
      }
      await admin.apply(
        CUSTOM_RESOURCE_DEFINITION,
        ptemplateCrdWithConversion(url("/convert")),
        { fieldManager: "test", force: true },
      );
      const ready = await fetch(`http://127.0.0.1:${manager.endpoints.healthPort}/readyz?verbose`);
      expect(await ready.text()).toContain("[+]webhooks ok");
    });

    await step(
      "kubectl apply prints the warnings: Pod Security, a missing pull secret",
      async () => {
        await admin.create(NAMESPACE, {
          metadata: {
            name: "strict",
            labels: { "pod-security.kubernetes.io/enforce": "restricted" },
          },
        });
        // The webhook configuration takes a moment to reach the API server's admission chain.
        const applied = await eventually(async () => {
          const out = await kubectl(
            ptYaml("strict", "locked", "  imageRepoSecret:\n    name: nowhere\n"),
            "apply",
            "-f",
            "-",
          );
          expect(out.stderr).toContain("Warning:");
          return out;
        }, { timeoutMs: 30_000 });
        expect(applied.code).toBe(0);
        expect(applied.stderr).toContain(
          'Warning: namespace strict enforces Pod Security "restricted", which refuses the privileged consumer pods',
        );
        expect(applied.stderr).toContain(
          'Warning: spec.imageRepoSecret: Secret "nowhere" does not exist in namespace strict',
        );
        // A Ptemplate that will work gets no warning.
        await admin.create(NAMESPACE, { metadata: { name: "fine" } });
        const quiet = await kubectl(ptYaml("fine", "quiet"), "apply", "-f", "-");
        expect(quiet).toMatchObject({ code: 0, stderr: "" });
        // One that could never work is refused with the field and the fix (by CEL, before us).
        const refused = await kubectl(
          ptYaml("fine", "impossible", "  maxdev: 2\n  requiredDevices: 3\n"),
          "apply",
          "-f",
          "-",
        );
        expect(refused.code).not.toBe(0);
        expect(refused.stderr).toContain("spec.requiredDevices must not exceed spec.maxdev");
        expect(refused.stderr).toContain("raise maxdev or lower requiredDevices");
      },
    );

    await step(
      "v1beta1 through the conversion webhook; both versions reconcile alike",
      async () => {
        await admin.create(NAMESPACE, { metadata: { name: "versions" } });
        await admin.create(PTEMPLATE_V1BETA1, {
          metadata: { name: "beta", namespace: "versions" },
          spec: { maxDevices: 4, consumerImage: "quay.io/org/consumer:1", selector: WORKER },
        });
        await admin.create(
          PTEMPLATE,
          {
            metadata: { name: "alpha", namespace: "versions" },
            spec: { maxdev: 4, consumer: "quay.io/org/consumer:1", selector: WORKER },
          } as Ptemplate & Unstructured,
        );
        // Each read in the other version, through the webhook.
        const betaAsAlpha = await admin.get(PTEMPLATE, "beta", {
          namespace: "versions",
        });
        expect(betaAsAlpha.spec).toMatchObject({
          maxdev: 4,
          consumerimage: "quay.io/org/consumer:1",
        });
        const alphaAsBeta = await admin.get(PTEMPLATE_V1BETA1, "alpha", { namespace: "versions" });
        expect(alphaAsBeta.spec).toMatchObject({
          maxDevices: 4,
          consumerImage: "quay.io/org/consumer:1",
        });
        expect(alphaAsBeta.spec).not.toHaveProperty("consumer");
        const listed = await admin.list(PTEMPLATE, {
          namespace: "versions",
        });
        expect(listed.items.map((p) => p.metadata?.name).sort()).toEqual(["alpha", "beta"]);
        // The operator makes the same consumer DaemonSet for both.
        const consumers = await eventually(async () => {
          const dss = await Promise.all(
            ["alpha", "beta"].map((name) =>
              admin.get(DAEMON_SET, `${name}-consumer`, {
                namespace: "versions",
              })
            ),
          );
          return dss.map((ds) => ds.spec!.template.spec!.containers);
        });
        expect(consumers[0]).toEqual(consumers[1]);
      },
    );

    await step("a certificate rotation under load: no request fails", async () => {
      let failures = 0;
      let requests = 0;
      let going = true;
      const load = (async () => {
        for (let i = 0; going; i++) {
          try {
            // A conversion on every read (no failure policy: a failed call fails the read) and an
            // admission on every write.
            await admin.get(PTEMPLATE_V1BETA1, "alpha", { namespace: "versions" });
            await admin.patch(PTEMPLATE, "alpha", { metadata: { labels: { round: String(i) } } }, {
              namespace: "versions",
            });
            requests += 2;
          } catch (error) {
            failures++;
            console.error(`during rotation: ${(error as Error).message}`);
          }
        }
      })();
      const before = manager.webhooks!.answered.get("/convert answered") ?? 0;
      const rotated = manager.webhooks!.rotations;
      for (let rotation = 0; rotation < 3; rotation++) {
        await sleep(700);
        await writeCert();
      }
      await sleep(700);
      going = false;
      await load;
      expect(manager.webhooks!.rotations - rotated).toBe(3);
      expect(failures).toBe(0);
      expect(requests).toBeGreaterThan(20);
      expect(manager.webhooks!.answered.get("/convert answered")! - before).toBeGreaterThan(10);
      expect(manager.webhooks!.answered.get("/convert failed") ?? 0).toBe(0);
    });

    await step(
      "with the operator stopped: other writes go on; Ptemplates as the policy says",
      async () => {
        await stopOperator();
        // Unrelated writes do not touch our webhooks at all.
        await admin.create(CONFIG_MAP, {
          metadata: { name: "unrelated", namespace: "fine" },
          data: { a: "b" },
        });
        // failurePolicy Ignore: a v1alpha1 Ptemplate is still accepted, only without warnings.
        const out = await kubectl(
          ptYaml("strict", "unwarned", "  imageRepoSecret:\n    name: nowhere\n"),
          "apply",
          "-f",
          "-",
        );
        expect(out.code).toBe(0);
        expect(out.stderr).not.toContain("Pod Security");
        // Conversion has no failure policy: v1beta1 cannot be served until the operator is back.
        const beta = await admin.get(PTEMPLATE_V1BETA1, "alpha", { namespace: "versions" }).catch((
          e,
        ) => e);
        expect(beta).toBeInstanceOf(Error);
        expect(String(beta.message)).toMatch(/conversion webhook/);
      },
    );
  } finally {
    await stopOperator();
    await Deno.remove(certDir, { recursive: true });
  }
});

await integrationTest("webhooks: self-managed certificates, renewed under load", {
  crds: [PTEMPLATE_CRD],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "ptemplate-operator-system" } });
  await admin.create(NAMESPACE, { metadata: { name: "work" } });
  // The certificates' own client: they are kept apart from the operator's.
  const client = new KubeClient(plane.adminConfig, { userAgent: "self-managed-certificates" });
  // Short-lived on purpose: renewed every few seconds, so the test sees renewals.
  const certificate = selfManagedCertificate({
    client,
    namespace: "ptemplate-operator-system",
    secretName: "webhook-cert",
    managedBy: "ptemplate-operator",
    hosts: { dns: ["localhost"], ips: ["127.0.0.1"] },
    webhookConfigurations: ["ptemplate-operator"],
    crds: ["ptemplates.pt.example.com"],
    servingLifetimeMs: 6_000,
    renewBeforeMs: 3_000,
    checkEveryMs: 500,
    log: log("test"),
  });
  const { manager, stop } = runManager(plane.adminConfig, {
    userAgent: "self-managed-test-operator",
    plugins: PTEMPLATE_PLUGINS,
    webhooks: {
      bind: { hostname: "127.0.0.1", port: 0 },
      certificate,
      conversions: [PTEMPLATE_CONVERSION],
      reloadMs: 200,
    },
  });
  const secretCert = async () =>
    (await admin.get(SECRET, "webhook-cert", {
      namespace: "ptemplate-operator-system",
    })).data?.["tls.crt"];
  try {
    await step(
      "it makes its Secret and puts its CA into the configurations it serves",
      async () => {
        await eventually(() => expect(manager.endpoints.webhookPort).toBeGreaterThan(0));
        const url = (path: string) => ({
          url: `https://127.0.0.1:${manager.endpoints.webhookPort}${path}`,
        });
        // Made without a caBundle, as deploy/webhooks/self-managed ships them.
        for (const config of webhookConfigurations(PTEMPLATE_PLUGINS, url)) {
          await admin.apply(VALIDATING_WEBHOOK_CONFIGURATION, config, {
            fieldManager: "test",
            force: true,
          });
        }
        await admin.apply(CUSTOM_RESOURCE_DEFINITION, ptemplateCrdWithConversion(url("/convert")), {
          fieldManager: "test",
          force: true,
        });
        await eventually(async () => {
          const config = await admin.get(
            VALIDATING_WEBHOOK_CONFIGURATION,
            "ptemplate-operator",
          );
          expect(config.webhooks?.[0].clientConfig.caBundle).toBeTruthy();
          const crd = await admin.get(
            CUSTOM_RESOURCE_DEFINITION,
            "ptemplates.pt.example.com",
          );
          const spec = crd.spec as {
            conversion: { webhook: { clientConfig: { caBundle?: string } } };
          };
          expect(spec.conversion.webhook.clientConfig.caBundle).toBe(
            config.webhooks?.[0].clientConfig.caBundle,
          );
        });
        // The CRD was just changed (its conversion's caBundle), so the API server replaces its
        // storage: a request that meets the old one's teardown gets 503 "apiserver is shutting
        // down", unserved. Again until it is served; a create that was (409) is done.
        await eventually(() =>
          admin.create(PTEMPLATE_V1BETA1, {
            metadata: { name: "beta", namespace: "work" },
            spec: { maxDevices: 3, selector: WORKER },
          }).catch((error) => {
            if (!isApiError(error, 409)) throw error;
          })
        );
        expect(
          (await admin.get(PTEMPLATE, "beta", { namespace: "work" })).spec
            .maxdev,
        )
          .toBe(3);
      },
    );

    await step("renewals under load: no request fails", async () => {
      const first = await secretCert();
      const rotated = manager.webhooks!.rotations;
      let failures = 0;
      let requests = 0;
      const until = Date.now() + 9_000;
      while (Date.now() < until) {
        try {
          await admin.get(PTEMPLATE_V1BETA1, "beta", { namespace: "work" });
          requests++;
        } catch (error) {
          failures++;
          console.error(`during renewal: ${(error as Error).message}`);
        }
      }
      expect(failures).toBe(0);
      expect(requests).toBeGreaterThan(20);
      expect(await secretCert()).not.toBe(first);
      expect(manager.webhooks!.rotations - rotated).toBeGreaterThanOrEqual(2);
    });
  } finally {
    await stop();
    client.close();
  }
});

await integrationTest("webhooks: two replicas both serve, leader or not", {
  crds: [PTEMPLATE_CRD],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "pair" } });
  const pki = await createServingPki();
  const certDir = await Deno.makeTempDir({ prefix: "webhook-certs-" });
  const { cert, key } = await pki.issue();
  await Deno.writeTextFile(`${certDir}/tls.crt`, cert);
  await Deno.writeTextFile(`${certDir}/tls.key`, key);
  const replica = (identity: string) =>
    runManager(plane.adminConfig, {
      userAgent: `replica-${identity}`,
      plugins: PTEMPLATE_PLUGINS,
      leaderElection: { namespace: "default", name: "webhooks-pair", identity },
      webhooks: {
        bind: { hostname: "127.0.0.1", port: 0 },
        certificate: certificateFromDir(certDir),
        conversions: [PTEMPLATE_CONVERSION],
      },
    });
  const replicas = [replica("a"), replica("b")];
  const pointAt = async (port: number) => {
    const url = (path: string) => ({
      url: `https://127.0.0.1:${port}${path}`,
      caBundle: btoa(pki.ca.cert),
    });
    await admin.apply(CUSTOM_RESOURCE_DEFINITION, ptemplateCrdWithConversion(url("/convert")), {
      fieldManager: "test",
      force: true,
    });
  };
  try {
    await step("the follower converts as well as the leader", async () => {
      await eventually(() => expect(replicas.filter((r) => r.manager.leading)).toHaveLength(1));
      await eventually(() =>
        expect(replicas.every((r) => r.manager.endpoints.webhookPort)).toBe(true)
      );
      await admin.create(
        PTEMPLATE,
        {
          metadata: { name: "p", namespace: "pair" },
          spec: { maxdev: 2, selector: WORKER },
        } as Ptemplate & Unstructured,
      );
      for (const r of replicas) {
        const before = r.manager.webhooks!.answered.get("/convert answered") ?? 0;
        await pointAt(r.manager.endpoints.webhookPort!);
        await eventually(async () => {
          const beta = await admin.get(PTEMPLATE_V1BETA1, "p", { namespace: "pair" });
          expect(beta.spec).toMatchObject({ maxDevices: 2 });
          expect(r.manager.webhooks!.answered.get("/convert answered") ?? 0).toBeGreaterThan(
            before,
          );
        });
      }
    });

    await step("stopping the leader does not interrupt the follower's webhooks", async () => {
      const leader = replicas.find((r) => r.manager.leading)!;
      const follower = replicas.find((r) => r !== leader)!;
      await pointAt(follower.manager.endpoints.webhookPort!);
      await sleep(1_000);
      let failures = 0;
      let reads = 0;
      const load = (async () => {
        const until = Date.now() + 4_000;
        while (Date.now() < until) {
          await admin.get(PTEMPLATE_V1BETA1, "p", { namespace: "pair" }).then(
            () => reads++,
            () => failures++,
          );
        }
      })();
      await leader.stop();
      await load;
      expect(failures).toBe(0);
      expect(reads).toBeGreaterThan(10);
      // And the follower takes over the controllers.
      await eventually(() => expect(follower.manager.leading).toBe(true), { timeoutMs: 30_000 });
    });
  } finally {
    for (const r of replicas) await r.stop().catch(() => {});
    await Deno.remove(certDir, { recursive: true });
  }
});
