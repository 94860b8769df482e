import { expect } from "expect";
import { parse } from "yaml";
import type { Ptemplate } from "../crds/ptemplate.ts";
import type { Stored } from "../mod.ts";
import { daemonSetFor } from "./consumer_daemonset.ts";
import { moduleFor } from "./kmm_module_plugin.ts";

function example(file: string): Stored<Ptemplate, true> {
  const pt = parse(
    Deno.readTextFileSync(new URL(`../examples/${file}`, import.meta.url)),
  ) as Ptemplate;
  return {
    ...pt,
    metadata: { ...pt.metadata, name: pt.metadata!.name!, namespace: "demo", uid: "0b5e-uid" },
  };
}

Deno.test("moduleFor: the seed example, field by field", () => {
  expect(moduleFor(example("seed.yaml"))).toEqual({
    apiVersion: "kmm.sigs.x-k8s.io/v1beta1",
    kind: "Module",
    metadata: { name: "consumer-pod", namespace: "demo" },
    spec: {
      moduleLoader: {
        container: {
          modprobe: {
            moduleName: "ptemplate_char_dev",
            parameters: ["max_dev=5", "default_msg=ptemplate"],
          },
          imagePullPolicy: "Always",
          kernelMappings: [{
            regexp: "^.+$",
            containerImage: "quay.io/chrisp262/pt-char-dev:${KERNEL_FULL_VERSION}-sb",
          }],
        },
      },
      devicePlugin: { container: { image: "quay.io/chrisp262/pt-device-plugin:plugin-latest" } },
      imageRepoSecret: { name: "pt-char-pull-secret" },
      selector: { "node-role.kubernetes.io/worker": "worker" },
    },
  });
});

Deno.test("moduleFor: the original spellings resolve the same; no secret, no default_msg when unset", () => {
  const original = moduleFor(example("original.yaml"));
  expect(original.spec.imageRepoSecret).toEqual({ name: "pt-char-pull-secret" });
  const bare = moduleFor({
    metadata: { name: "b", namespace: "n", uid: "b-uid" },
    spec: { selector: { a: "b" } },
  });
  expect(bare.spec.imageRepoSecret).toBeUndefined();
  expect(bare.spec.moduleLoader.container.modprobe.parameters).toEqual(["max_dev=5"]);
  expect(bare.spec.devicePlugin).toEqual({
    container: { image: "quay.io/chrisp262/pt-device-plugin:plugin-latest" },
  });
});

Deno.test("daemonSetFor: the seed example, field by field", () => {
  expect(daemonSetFor(example("seed.yaml"))).toEqual({
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "consumer-pod-consumer", namespace: "demo", labels: { app: "consumer-pod" } },
    spec: {
      // Pods are selected by the Ptemplate's UID, not by `app`, which anyone may put on a pod.
      selector: { matchLabels: { "pt.example.com/ptemplate-uid": "0b5e-uid" } },
      template: {
        metadata: { labels: { app: "consumer-pod", "pt.example.com/ptemplate-uid": "0b5e-uid" } },
        spec: {
          nodeSelector: { "node-role.kubernetes.io/worker": "worker" },
          imagePullSecrets: [{ name: "pt-char-pull-secret" }],
          containers: [{
            name: "consumer",
            image: "quay.io/chrisp262/pt-device-plugin:consumer-latest",
            imagePullPolicy: "Always",
            securityContext: { privileged: true },
            resources: { limits: { "example.com/ptemplate": "2" } },
            volumeMounts: [{ name: "hostdev", mountPath: "/hostdev" }],
          }],
          volumes: [{ name: "hostdev", hostPath: { path: "/dev" } }],
        },
      },
    },
  });
});

Deno.test("daemonSetFor: no pull secret when none is given (the original crashed here)", () => {
  const ds = daemonSetFor({
    metadata: { name: "b", namespace: "n", uid: "u" },
    spec: { selector: { a: "b" }, consumer: "r/x:1" },
  });
  expect(ds.spec!.template.spec!.imagePullSecrets).toBeUndefined();
  expect(ds.spec!.template.spec!.containers[0].image).toBe("r/x:1");
  expect(ds.spec!.template.spec!.containers[0].resources!.limits).toEqual({
    "example.com/ptemplate": "1",
  });
});
