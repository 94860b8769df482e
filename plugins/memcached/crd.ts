/** The `Memcached` custom resource (cache.example.com/v1alpha1): its CRD and types. */
import {
  customResourceDefinition,
  type KubeObject,
  type Resource,
  type Unstructured,
} from "../../mod.ts";
import type { MemcachedSpec, MemcachedStatus } from "./memcached_types.ts";

export const MEMCACHED: Resource<Memcached, true> = {
  group: "cache.example.com",
  version: "v1alpha1",
  kind: "Memcached",
  plural: "memcacheds",
  namespaced: true,
};

/** Its spec and status types are generated from the schema below (`deno task crds`). */
export interface Memcached extends KubeObject {
  spec: MemcachedSpec;
  status?: MemcachedStatus;
}

export const MEMCACHED_CRD: Unstructured = customResourceDefinition(MEMCACHED, {
  columns: [
    { name: "Size", type: "integer", jsonPath: ".spec.size" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  spec: {
    type: "object",
    required: ["size"],
    properties: {
      size: {
        type: "integer",
        minimum: 0,
        maximum: 100,
        description: "Number of memcached pods (0–100).",
      },
    },
  },
  status: {
    nodes: {
      type: "array",
      items: { type: "string" },
      description: "Names of the memcached pods.",
    },
  },
});
