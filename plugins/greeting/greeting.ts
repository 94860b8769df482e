/** The smallest useful plugin: a Greeting becomes a ConfigMap holding its message. */
import {
  CONFIG_MAP,
  customResourceDefinition,
  definePlugin,
  type KubeObject,
  type Resource,
  type Unstructured,
} from "../../mod.ts";

export const GREETING: Resource<Greeting, true> = {
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

export const GREETING_CRD: Unstructured = customResourceDefinition(GREETING, {
  spec: {
    type: "object",
    required: ["message"],
    properties: { message: { type: "string", minLength: 1, maxLength: 256 } },
  },
  status: { configMap: { type: "string" } },
});

export const greetingPlugin = definePlugin({
  name: "greeting",
  for: GREETING,
  owns: [CONFIG_MAP],
  reconcile(greeting) {
    const name = `${greeting.metadata.name}-greeting`;
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
