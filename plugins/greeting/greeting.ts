/** The smallest useful plugin: a Greeting becomes a ConfigMap holding its message. */
import {
  CONFIG_MAP,
  definePlugin,
  type KubeObject,
  type Resource,
  type Unstructured,
} from "../../mod.ts";

export const GREETING: Resource = {
  group: "example.ptemplate.dev",
  version: "v1",
  kind: "Greeting",
  plural: "greetings",
  namespaced: true,
};

export interface Greeting extends KubeObject {
  spec: { message: string };
  status?: { configMap?: string };
}

export const GREETING_CRD: Unstructured = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "greetings.example.ptemplate.dev" },
  spec: {
    group: GREETING.group,
    names: {
      kind: "Greeting",
      plural: "greetings",
      singular: "greeting",
      listKind: "GreetingList",
    },
    scope: "Namespaced",
    versions: [{
      name: "v1",
      served: true,
      storage: true,
      subresources: { status: {} },
      schema: {
        openAPIV3Schema: {
          type: "object",
          properties: {
            spec: {
              type: "object",
              required: ["message"],
              properties: { message: { type: "string", minLength: 1, maxLength: 256 } },
            },
            // The runtime writes observedGeneration with every status: declare it.
            status: {
              type: "object",
              properties: {
                configMap: { type: "string" },
                observedGeneration: { type: "integer" },
              },
            },
          },
        },
      },
    }],
  },
};

export const greetingPlugin = definePlugin<Greeting>({
  name: "greeting",
  for: GREETING,
  owns: [CONFIG_MAP],
  reconcile(greeting) {
    const name = `${greeting.metadata!.name}-greeting`;
    return {
      children: [{
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name },
        data: { message: greeting.spec.message },
      }],
      status: { configMap: name },
    };
  },
});
