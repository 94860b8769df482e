import { expect } from "expect";
import { CONFIG_MAP, CUSTOM_RESOURCE_DEFINITION, DAEMON_SET, NODE } from "./kinds.ts";
import { apiVersionOf, resourcePath } from "./resource.ts";

Deno.test("resourcePath: core, grouped, namespaced, cluster-scoped and subresources", () => {
  expect(resourcePath(CONFIG_MAP)).toBe("/api/v1/configmaps");
  expect(resourcePath(CONFIG_MAP, { namespace: "a", name: "b" })).toBe(
    "/api/v1/namespaces/a/configmaps/b",
  );
  expect(resourcePath(DAEMON_SET, { namespace: "a", name: "d", subresource: "status" }))
    .toBe("/apis/apps/v1/namespaces/a/daemonsets/d/status");
  expect(resourcePath(NODE, { name: "n" })).toBe("/api/v1/nodes/n");
  expect(resourcePath(CUSTOM_RESOURCE_DEFINITION)).toBe(
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
  );
  expect(apiVersionOf(DAEMON_SET)).toBe("apps/v1");
  expect(apiVersionOf(CONFIG_MAP)).toBe("v1");
});

Deno.test("resourcePath: mistakes are named", () => {
  expect(() => resourcePath(NODE, { namespace: "x" })).toThrow(/Node is cluster-scoped/);
  expect(() => resourcePath(CONFIG_MAP, { name: "" })).toThrow(/name must not be empty/);
  expect(() => resourcePath(CONFIG_MAP, { subresource: "status" })).toThrow(/needs a name/);
});
