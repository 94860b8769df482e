import { expect } from "expect";
import { resourceOf } from "./request_sender.ts";

Deno.test("a request's span is named by its resource: few names, never an object's", () => {
  expect(resourceOf("/api/v1/namespaces/ns/pods")).toBe("pods");
  expect(resourceOf("/api/v1/namespaces/ns/pods/p/status")).toBe("pods/status");
  expect(resourceOf("/apis/pt.example.com/v1alpha1/namespaces/ns/ptemplates/x/status?dryRun=All"))
    .toBe("ptemplates/status");
  expect(resourceOf("/apis/coordination.k8s.io/v1/namespaces/ns/leases/lease-1")).toBe("leases");
  expect(resourceOf("/api/v1/nodes/n1")).toBe("nodes");
  expect(resourceOf("/api/v1/namespaces/default")).toBe("namespaces");
  expect(resourceOf("/api/v1/namespaces")).toBe("namespaces");
  expect(resourceOf("/readyz")).toBe("readyz");
  expect(resourceOf("/")).toBe("/");
});
