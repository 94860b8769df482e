/**
 * Our rules judge changes, never states: Ptemplates stored before a rule existed (written the way
 * an earlier release let them in: no CEL rules, no bounds, no empty-value policy) stay writable
 * and deletable once this version's rules are installed, against the real API server, garbage
 * collector and the operator's webhooks (validation with `failurePolicy: Fail`, so that a refusal
 * of ours would show, and conversion, through which v1beta1 readers see them). Every kind of rule
 * we ship is met: the CRD's rule on the whole object, on the spec, on a map, entry by entry; bounds
 * and scalar rules (the API server's own ratcheting); the empty-value admission policy and the
 * leader and shard fences; the webhook's checks; the conversion. What still refuses is an edit
 * that makes an object worse.
 */
import { expect } from "expect";
import { leaderFencePolicy } from "../cli/leader_fence_policy.ts";
import { PTEMPLATE_CONVERSION } from "../cli/plugin_catalog.ts";
import { shardFencePolicy } from "../cli/shard_fence_policy.ts";
import { webhookConfigurations } from "../cli/webhook_manifests.ts";
import { KMM_MODULE_CRD_FILE } from "../crds/kmm_module.ts";
import {
  PTEMPLATE,
  PTEMPLATE_CRD,
  PTEMPLATE_V1BETA1,
  ptemplateCrdWithConversion,
} from "../crds/ptemplate.ts";
import { isApiError } from "../kube/errors.ts";
import { emptyValuePolicy, policyResource } from "../kube/empty_value_policy.ts";
import {
  CUSTOM_RESOURCE_DEFINITION,
  DAEMON_SET,
  NAMESPACE,
  VALIDATING_WEBHOOK_CONFIGURATION,
} from "../kube/kinds.ts";
import type { Unstructured } from "../kube/object.ts";
import { PTEMPLATE_PLUGINS } from "../reconcilers/mod.ts";
import { certificateFromDir } from "../runtime/observe/mod.ts";
import { createServingPki } from "../testing/control_plane_pki.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { runManager } from "../testing/running_manager.ts";
import { kubectl } from "./fixtures/kubectl.ts";
import { spawnOperator } from "./fixtures/operator_command.ts";

const NS = "stored";
const KEEP = "example.com/keep";
const WORKER = { "node-role.kubernetes.io/worker": "worker" };
const LONG_NAME = "a-ptemplate-whose-name-is-longer-than-a-daemonset-allows-x";

/** The CRD as an earlier release might have had it: the same fields, none of the rules or bounds. */
function withoutRules(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutRules);
  if (typeof value !== "object" || value === null) return value;
  const dropped = ["x-kubernetes-validations", "maxLength", "maxProperties", "nullable"];
  return Object.fromEntries(
    Object.entries(value).filter(([key]) => !dropped.includes(key)).map((
      [key, v],
    ) => [key, withoutRules(v)]),
  );
}

/** Each stored object and the rule of today it breaks. */
const STALE: Record<string, Record<string, unknown>> = {
  // The rule on the whole object (metadata.name's length).
  [LONG_NAME]: { selector: WORKER },
  // A rule on the spec across two fields.
  excess: { selector: WORKER, maxdev: 4, requiredDevices: 8 },
  // Rules on a map, entry by entry: a key and a value outside the label grammar.
  "bad-key": { selector: { ...WORKER, "Bad_Key!": "x" } },
  "bad-value": { selector: { ...WORKER, zone: "-bad-" } },
  // A rule on a map as a whole.
  "empty-selector": { selector: {} },
  // Bounds: a map's size and a string's length (schema keywords).
  "many-labels": {
    selector: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`l${i}`, "v"])),
  },
  "long-msg": { selector: WORKER, defaultmsg: "m".repeat(70) },
  // A rule on a scalar.
  "bad-msg": { selector: WORKER, defaultmsg: "two words" },
};

await integrationTest("rules judge changes: objects stored before a rule are never stranded", {
  controllerManager: true,
  crds: [withoutRules(PTEMPLATE_CRD) as Unstructured, KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  const run = (args: string[], stdin?: string) =>
    kubectl(plane.binaries.kubectl, plane.adminKubeconfigPath, args, { stdin });
  const ok = async (args: string[], stdin?: string) => {
    const out = await run(args, stdin);
    expect({ args, code: out.code, stderr: out.stderr }).toMatchObject({ code: 0 });
    return out;
  };
  const refused = async (args: string[], stdin: string | undefined, words: string) => {
    const out = await run(args, stdin);
    expect({ args, code: out.code }).toEqual({ args, code: 1 });
    expect(out.stderr).toContain(words);
  };
  const pt = (name: string, spec: string) =>
    `apiVersion: pt.example.com/v1alpha1\nkind: Ptemplate\nmetadata:\n  name: ${name}\n` +
    `  namespace: ${NS}\n  finalizers: [${KEEP}]\nspec:\n${spec}`;
  const nullSelector = (extra = "") =>
    pt(
      "null-selector",
      `  selector:\n    node-role.kubernetes.io/worker: worker\n    topology.kubernetes.io/zone:\n${extra}`,
    );
  await admin.create(NAMESPACE, { metadata: { name: NS } });

  const pki = await createServingPki();
  const certDir = await Deno.makeTempDir({ prefix: "stored-certs-" });
  const { cert, key } = await pki.issue();
  await Deno.writeTextFile(`${certDir}/tls.crt`, cert);
  await Deno.writeTextFile(`${certDir}/tls.key`, key);
  const operator = runManager(plane.adminConfig, {
    userAgent: "stored-objects-test-operator",
    plugins: PTEMPLATE_PLUGINS,
    webhooks: {
      bind: { hostname: "127.0.0.1", port: 0 },
      certificate: certificateFromDir(certDir),
      conversions: [PTEMPLATE_CONVERSION],
      crds: [PTEMPLATE_CRD],
    },
  });

  try {
    await step("an earlier release stores what today's rules refuse", async () => {
      // kubectl apply (client-side) drops a key without a value from the object and keeps it,
      // as null, in its last-applied annotation.
      await ok(["apply", "-f", "-"], nullSelector());
      for (const [name, spec] of Object.entries(STALE)) {
        await admin.create(PTEMPLATE, {
          metadata: { name, namespace: NS, finalizers: [KEEP] },
          spec,
        } as Unstructured);
      }
    });

    await step("check names each, with the field, before the upgrade", async () => {
      const out = await spawnOperator(["check", "--kubeconfig", plane.adminKubeconfigPath])
        .output();
      const stdout = new TextDecoder().decode(out.stdout);
      expect({ code: out.code, stderr: new TextDecoder().decode(out.stderr) }).toMatchObject({
        code: 1,
      });
      expect(stdout).toContain(
        `Ptemplate ${NS}/null-selector: spec.selector key topology.kubernetes.io/zone has no value`,
      );
      expect(stdout).toContain(`Ptemplate ${NS}/${LONG_NAME}: the object: metadata.name`);
      expect(stdout).toContain(`Ptemplate ${NS}/excess: spec.requiredDevices: `);
      for (const name of Object.keys(STALE)) expect(stdout).toContain(`Ptemplate ${NS}/${name}: `);
      expect(stdout).toContain("Ptemplate: 9 of 9 stored object(s) break rules of this version");
      expect(stdout).not.toContain("not checked here");
    });

    await step(
      "this version's rules are installed: CRD, policy, webhooks, conversion",
      async () => {
        await eventually(() => expect(operator.manager.endpoints.webhookPort).toBeGreaterThan(0));
        const url = (path: string) => ({
          url: `https://127.0.0.1:${operator.manager.endpoints.webhookPort}${path}`,
          caBundle: btoa(pki.ca.cert),
        });
        for (const config of webhookConfigurations(PTEMPLATE_PLUGINS, url)) {
          const strict = {
            ...config,
            webhooks: (config.webhooks as Record<string, unknown>[]).map((w) => ({
              ...w,
              failurePolicy: "Fail",
            })),
          };
          await admin.apply(VALIDATING_WEBHOOK_CONFIGURATION, strict, {
            fieldManager: "test",
            force: true,
          });
        }
        await admin.apply(CUSTOM_RESOURCE_DEFINITION, ptemplateCrdWithConversion(url("/convert")), {
          fieldManager: "test",
          force: true,
        });
        // Every admission policy we ship: the fences judge only the operator's pods' writes.
        const policies = [
          ...emptyValuePolicy(PTEMPLATE_CRD),
          ...leaderFencePolicy(),
          ...shardFencePolicy(),
        ];
        for (const policy of policies) {
          await admin.apply(policyResource(policy)!, policy, { fieldManager: "test", force: true });
        }
        // Every rule is in force: a new object like each stored one is refused.
        await eventually(
          () =>
            refused(
              ["apply", "--dry-run=server", "-f", "-"],
              nullSelector().replace("name: null-selector", "name: null-selector-2"),
              "spec.selector key topology.kubernetes.io/zone has no value",
            ),
          { timeoutMs: 30_000 },
        );
        for (const [name, spec] of Object.entries(STALE)) {
          const copy = name === LONG_NAME ? `${name}-2` : `${name}-new`;
          const error = await admin.create(PTEMPLATE, {
            metadata: { name: copy, namespace: NS },
            spec,
          } as Unstructured, { dryRun: true }).then(() => undefined, (e) => e);
          expect({ name, refused: isApiError(error, 422) }).toEqual({ name, refused: true });
        }
      },
    );

    const names = ["null-selector", ...Object.keys(STALE)];

    await step("label and annotate pass", async () => {
      for (const name of names) {
        await ok(["label", "-n", NS, "ptemplate", name, "upgraded=yes"]);
        await ok(["annotate", "-n", NS, "ptemplate", name, "note=checked"]);
      }
    });

    await step("v1beta1 readers see every one (the conversion)", async () => {
      const beta = await admin.list(PTEMPLATE_V1BETA1, { namespace: NS });
      expect(beta.items.map((p) => p.metadata?.name).sort()).toEqual([...names].sort());
    });

    await step("an edit of another field passes", async () => {
      for (const name of names) {
        await admin.patch(PTEMPLATE, name, { spec: { deviceplugin: "quay.io/org/plugin:2" } }, {
          namespace: NS,
        });
      }
    });

    await step("the operator writes their status (a subresource of the whole object)", async () => {
      await eventually(async () => {
        // The edit above made a new generation, after the rules came: its status is a new write.
        const stored = await admin.get(PTEMPLATE, LONG_NAME, { namespace: NS });
        expect(stored.metadata?.generation).toBe(2);
        expect(stored.status?.observedGeneration).toBe(2);
      }, { timeoutMs: 30_000 });
    });

    await step("an edit that makes one worse is refused, naming the field", async () => {
      const worse = async (name: string, patch: unknown, words: string) => {
        const error = await admin.patch(PTEMPLATE, name, patch, { namespace: NS }).then(
          () => undefined,
          (e) => e,
        );
        expect({ name, refused: isApiError(error, 422) }).toEqual({ name, refused: true });
        expect((error as Error).message).toContain(words);
      };
      await worse("excess", { spec: { requiredDevices: 9 } }, "spec.requiredDevices must not");
      await worse("bad-key", { spec: { selector: { "Worse Key": "y" } } }, "spec.selector keys");
      await worse("bad-value", { spec: { selector: { zone: "-worse-" } } }, "spec.selector values");
      await worse("bad-msg", { spec: { defaultmsg: "three bad words" } }, "spec.defaultmsg");
      await worse(LONG_NAME, { spec: { maxdev: 0 } }, "spec.maxdev");
      // A second key without a value, under kubectl apply: the policy names the new one.
      await refused(
        ["apply", "-f", "-"],
        nullSelector("    kubernetes.io/os:\n"),
        "spec.selector key kubernetes.io/os has no value",
      );
    });

    await step("an edit toward validity passes, one step at a time", async () => {
      await ok(["apply", "-f", "-"], nullSelector().replace("zone:\n", "zone: a\n"));
      await admin.patch(PTEMPLATE, "excess", { spec: { requiredDevices: 6 } }, { namespace: NS });
      await admin.patch(PTEMPLATE, "bad-key", { spec: { selector: { "Bad_Key!": null } } }, {
        namespace: NS,
      });
      await admin.patch(PTEMPLATE, "empty-selector", { spec: { selector: WORKER } }, {
        namespace: NS,
      });
      await admin.patch(PTEMPLATE, "many-labels", { spec: { selector: { l0: null } } }, {
        namespace: NS,
      });
      await admin.patch(PTEMPLATE, "long-msg", { spec: { defaultmsg: "short" } }, {
        namespace: NS,
      });
    });

    await step("finalizers come off, and every kind of deletion completes", async () => {
      // Children first, so that foreground deletion has dependents to wait for.
      await eventually(
        () => admin.get(DAEMON_SET, "excess-consumer", { namespace: NS }),
        { timeoutMs: 30_000 },
      );
      const cascade = (name: string) =>
        ["null-selector", "excess", LONG_NAME].includes(name)
          ? "foreground"
          : name === "bad-msg"
          ? "orphan"
          : "background";
      for (const name of names) {
        await ok([
          "delete",
          "-n",
          NS,
          "ptemplate",
          name,
          `--cascade=${cascade(name)}`,
          "--wait=false",
        ]);
        await admin.patch(PTEMPLATE, name, { metadata: { finalizers: null } }, { namespace: NS })
          .catch((error) => {
            // The garbage collector may have removed the last finalizer first.
            if (!isApiError(error, 404)) throw error;
          });
      }
      await eventually(async () => {
        const left = await admin.list(PTEMPLATE, { namespace: NS });
        expect(left.items.map((p) => p.metadata?.name)).toEqual([]);
      }, { timeoutMs: 60_000 });
      // The foreground deletion's dependents went with it.
      await eventually(async () => {
        const error = await admin.get(DAEMON_SET, "excess-consumer", { namespace: NS }).then(
          () => undefined,
          (e) => e,
        );
        expect(isApiError(error, 404)).toBe(true);
      }, { timeoutMs: 60_000 });
    });
  } finally {
    await operator.stop();
    await Deno.remove(certDir, { recursive: true });
  }
});
