import { expect } from "expect";
import type { KubeObject } from "../../kube/object.ts";
import { declares, metadataOnly, projector } from "./projection.ts";

Deno.test("declared paths: whole subtrees, and `[*]` into every item", () => {
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p" },
    spec: {
      nodeName: "n1",
      containers: [{ name: "a", image: "i", env: [{ name: "X" }] }, { name: "b", image: "j" }],
      volumes: [{ name: "v" }],
    },
    status: { phase: "Running", podIP: "10.0.0.1" },
  } as KubeObject;
  const project = projector({ fields: ["spec.containers[*].image", "status.phase"] });
  expect(project(pod)).toEqual({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p" },
    spec: { containers: [{ image: "i" }, { image: "j" }] },
    status: { phase: "Running" },
  });
  expect(metadataOnly({ fields: [] })).toBe(true);
  expect(metadataOnly({ fields: [], managed: true })).toBe(false);
  expect(() => projector({ fields: ["spec..x"] })).toThrow("dotted field names");
  expect(() => projector({ fields: ["metadata.labels"] })).toThrow("always kept");
  expect(declares({ fields: ["status.containerStatuses[*].state"] }, [
    "status",
    "containerStatuses",
    "3",
    "state",
    "waiting",
  ])).toBe("kept");
  expect(declares({ fields: ["status.phase"] }, ["status"])).toBe("leads");
  expect(declares({ fields: ["status.phase"] }, ["status", "podIP"])).toBe(false);
});

Deno.test("managed fields: list items are found by the keys that name them, of any type", () => {
  const fieldsV1 = {
    "f:spec": {
      "f:ports": {
        'k:{"port":80,"protocol":"TCP"}': { ".": {}, "f:port": {}, "f:protocol": {} },
        'k:{"port":"81","protocol":"TCP"}': { ".": {}, "f:port": {}, "f:protocol": {} },
      },
    },
  };
  const service = (ports: unknown[]) =>
    ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "s", managedFields: [{ manager: "m", operation: "Apply", fieldsV1 }] },
      spec: { ports, clusterIP: "10.0.0.1" },
    }) as KubeObject;
  const project = projector({ fields: [], managed: true });
  const ports = [
    { port: 80, protocol: "TCP", targetPort: 8080 },
    { port: 81, protocol: "TCP" },
    { port: 80, protocol: "UDP" },
  ];
  // Twice: the keys are parsed once and read again; the number 81 is not the string "81".
  for (let i = 0; i < 2; i++) {
    expect((project(service(ports)) as { spec: unknown }).spec).toEqual({
      ports: [{ port: 80, protocol: "TCP" }],
    });
  }
});
