/** The `Memcached` custom resource (cache.example.com/v1alpha1): its CRD and types. */
import type { KubeObject, Resource, Unstructured } from "../../mod.ts";

export const MEMCACHED: Resource = {
  group: "cache.example.com",
  version: "v1alpha1",
  kind: "Memcached",
  plural: "memcacheds",
  namespaced: true,
};

export interface Memcached extends KubeObject {
  spec: { size: number };
  status?: { nodes?: string[] };
}

export const MEMCACHED_CRD: Unstructured = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "memcacheds.cache.example.com" },
  spec: {
    group: MEMCACHED.group,
    names: {
      kind: "Memcached",
      listKind: "MemcachedList",
      plural: "memcacheds",
      singular: "memcached",
    },
    scope: "Namespaced",
    versions: [{
      name: MEMCACHED.version,
      served: true,
      storage: true,
      subresources: { status: {} },
      additionalPrinterColumns: [
        { name: "Size", type: "integer", jsonPath: ".spec.size" },
        { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
      ],
      schema: {
        openAPIV3Schema: {
          type: "object",
          required: ["spec"],
          properties: {
            apiVersion: { type: "string" },
            kind: { type: "string" },
            metadata: { type: "object" },
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
              type: "object",
              properties: {
                nodes: {
                  type: "array",
                  items: { type: "string" },
                  description: "Names of the memcached pods.",
                },
                observedGeneration: { type: "integer" },
              },
            },
          },
        },
      },
    }],
  },
};
