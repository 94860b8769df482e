/**
 * From a prototype to one's own operator, against the real control plane: a plugin run under
 * ptemplate-operator (as `--plugin` runs it) makes a Deployment and a Service, and another
 * Deployment is made as builds before the create-only apply made children, by POST, whose server
 * defaults the create gave its field manager; then the same kind under an own operator that takes
 * over from ptemplate-operator. The own operator adopts them without a `ForeignFieldsRemoved`
 * Warning, even when it reconciles again; the old plugin label and hash annotation are gone and
 * its own are there; the former field manager holds nothing; what the prototype set and the own
 * plugin no longer returns is dropped, and a child it no longer returns is pruned. An operator that
 * does not take over from ptemplate-operator still treats what the prototype set as foreign.
 */
import { expect } from "expect";
import type { Deployment } from "kubernetes-types/apps/v1.d.ts";
import { customResourceDefinition } from "../kube/custom_resource_definition.ts";
import { DEPLOYMENT, EVENT, NAMESPACE, SERVICE } from "../kube/kinds.ts";
import type { KubeObject } from "../kube/object.ts";
import type { Resource } from "../kube/resource.ts";
import { defineOperator, PTEMPLATE_OPERATOR } from "../runtime/identity/mod.ts";
import { definePlugin } from "../runtime/plugin/mod.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { runManager } from "../testing/running_manager.ts";

interface Website extends KubeObject {
  spec: { replicas: number };
}

const WEBSITE: Resource<Website, true> = {
  group: "web.example.com",
  version: "v1alpha1",
  kind: "Website",
  plural: "websites",
  namespaced: true,
};
const WEBSITE_CRD = customResourceDefinition(WEBSITE, {
  spec: {
    type: "object",
    properties: { replicas: { type: "integer", minimum: 0, maximum: 10 } },
  },
});

const NS = "sites";
/** Made by the prototype (a create-only apply), and as builds before it made children (POST). */
const SITES = ["site", "posted"];
const labels = (site: Website) => ({ app: site.metadata!.name! });
const deployment = (site: Website, extra: Partial<Deployment["spec"]> = {}) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: site.metadata!.name! },
  spec: {
    replicas: site.spec.replicas,
    selector: { matchLabels: labels(site) },
    template: {
      metadata: { labels: labels(site) },
      spec: { containers: [{ name: "web", image: "nginx:1.27" }] },
    },
    ...extra,
  },
});
const service = (site: Website) => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: site.metadata!.name! },
  spec: { selector: labels(site), ports: [{ port: 80 }] },
});

/** The prototype: a Deployment (with a field the later version drops) and a Service. */
const prototype = definePlugin({
  name: "website",
  for: WEBSITE,
  owns: [DEPLOYMENT, SERVICE],
  writesStatus: false,
  reconcile: (site) => ({
    children: [deployment(site, { minReadySeconds: 5 }), service(site)],
  }),
});

/** The same plugin grown up: no minReadySeconds, no Service. */
const grownUp = definePlugin({
  name: "website",
  for: WEBSITE,
  owns: [DEPLOYMENT, SERVICE],
  writesStatus: false,
  reconcile: (site) => ({ children: [deployment(site)] }),
});

const OWN = defineOperator({
  name: "web-operator",
  domain: "web.example.com",
  version: "0.1.0",
  takesOverFrom: [PTEMPLATE_OPERATOR],
});
const STRANGER = defineOperator({
  name: "web-operator",
  domain: "web.example.com",
  version: "0.1.0",
});

await integrationTest(
  "an own operator takes over a prototype's children: no Warning for defaults, old label gone",
  { crds: [WEBSITE_CRD] },
  async (plane, step) => {
    const admin = plane.client();
    await admin.create(NAMESPACE, { metadata: { name: NS } });
    const events = async (reason: string) =>
      (await admin.list(EVENT, { namespace: NS })).items
        .filter((e) => e.reason === reason)
        .map((e) => `${e.involvedObject.name}: ${e.message}`);
    const get = (name: string) => admin.get(DEPLOYMENT, name, { namespace: NS });

    await step("the prototype, as ptemplate-operator, makes its children", async () => {
      const running = runManager(plane.adminConfig, { plugins: [prototype] });
      try {
        await admin.create(WEBSITE, {
          metadata: { name: "site", namespace: NS },
          spec: { replicas: 1 },
        });
        await eventually(async () => {
          const made = await get("site");
          expect(made.metadata.labels).toEqual({ "operator.ptemplate.dev/plugin": "website" });
          await admin.get(SERVICE, "site", { namespace: NS });
        });
      } finally {
        await running.stop();
      }
      // Another, as builds before the create-only apply made children: by POST, which gave its
      // field manager the server's defaults too, what an unaware taker would call foreign.
      const made = await get("site");
      const older = await admin.create(WEBSITE, {
        metadata: { name: "posted", namespace: NS },
        spec: { replicas: 1 },
      });
      const posted = await admin.create(DEPLOYMENT, {
        ...deployment(older, { minReadySeconds: 5 }),
        metadata: {
          name: "posted",
          namespace: NS,
          labels: made.metadata.labels,
          annotations: made.metadata.annotations,
          ownerReferences: [{
            ...made.metadata.ownerReferences![0],
            name: "posted",
            uid: older.metadata!.uid!,
          }],
        },
      }, { fieldManager: "website" });
      const entry = posted.metadata.managedFields?.find((e) => e.manager === "website");
      expect(JSON.stringify(entry?.fieldsV1)).toContain('"f:dnsPolicy"');
    });

    await step(
      "the own operator takes them over, reconciles again, and warns of nothing",
      async () => {
        const running = runManager(plane.adminConfig, { operator: OWN, plugins: [grownUp] });
        try {
          await eventually(async () => {
            for (const name of SITES) {
              const site = await get(name);
              expect(site.metadata.labels).toEqual({
                "web-operator.web.example.com/plugin": "website",
              });
              expect(Object.keys(site.metadata.annotations ?? {})).toEqual([
                "web-operator.web.example.com/desired-hash",
              ]);
              // What only the prototype wanted is gone; so is the Service it no longer returns.
              expect(site.spec?.minReadySeconds).toBeUndefined();
            }
            const gone = await admin.get(SERVICE, "site", { namespace: NS }).catch((e) => e.code);
            expect(gone).toBe(404);
          }, { timeoutMs: 30_000 });
          // Another reconcile of the same parents: where the defaults would be found foreign.
          for (const name of SITES) {
            await admin.patch(WEBSITE, name, { spec: { replicas: 2 } }, { namespace: NS });
          }
          for (const name of SITES) {
            await eventually(async () => expect((await get(name)).spec?.replicas).toBe(2));
            const site = await get(name);
            const managers = site.metadata.managedFields?.filter((e) => !e.subresource)
              .map((e) => `${e.manager} ${e.operation}`);
            expect(managers).toEqual(["web-operator/website Apply"]);
            expect(site.spec?.template.spec?.dnsPolicy).toBe("ClusterFirst");
          }
        } finally {
          await running.stop();
        }
        expect(await events("ForeignFieldsRemoved")).toEqual([]);
        expect(await events("TakenOver")).toEqual(
          expect.arrayContaining(SITES.map((name) =>
            expect.stringMatching(
              new RegExp(
                `^${name}: Took over Deployment ${name}, made under a former identity ` +
                  "\\(field manager website\\)",
              ),
            )
          )),
        );
      },
    );

    await step(
      "an operator that does not take over from it finds the prototype's fields foreign",
      async () => {
        // Another prototype child; the taken-over parents go, so that no one fights over them.
        for (const name of SITES) await admin.delete(WEBSITE, name, { namespace: NS });
        const made = runManager(plane.adminConfig, { plugins: [prototype] });
        try {
          await admin.create(WEBSITE, {
            metadata: { name: "other", namespace: NS },
            spec: { replicas: 1 },
          });
          await eventually(async () => {
            expect((await get("other")).metadata.labels?.["operator.ptemplate.dev/plugin"]).toBe(
              "website",
            );
          });
        } finally {
          await made.stop();
        }
        const running = runManager(plane.adminConfig, { operator: STRANGER, plugins: [grownUp] });
        try {
          // Its first apply, then another reconcile, which looks for foreign fields.
          await eventually(async () => {
            const managers = (await get("other")).metadata.managedFields?.map((e) => e.manager);
            expect(managers).toContain("web-operator/website");
          });
          await admin.patch(WEBSITE, "other", { spec: { replicas: 2 } }, { namespace: NS });
          await eventually(async () => {
            expect((await events("ForeignFieldsRemoved")).join("\n")).toMatch(
              /^other: .*\(set by website\)/m,
            );
          }, { timeoutMs: 30_000 });
        } finally {
          await running.stop();
        }
        // Not taken over: the old label stays (the ownership rule still lets it write its child).
        expect((await get("other")).metadata.labels?.["operator.ptemplate.dev/plugin"]).toBe(
          "website",
        );
      },
    );
  },
);
