import { expect } from "expect";
import { reconcileOnce } from "../../mod.ts";
import { type Greeting, greetingPlugin } from "./greeting.ts";

Deno.test("a Greeting asks for one ConfigMap with its message", async () => {
  const greeting: Greeting = {
    apiVersion: "example.ptemplate.dev/v1",
    kind: "Greeting",
    metadata: { name: "hello", namespace: "demo" },
    spec: { message: "Hello, world" },
  };
  const { outcome } = await reconcileOnce(greetingPlugin, greeting);
  expect(outcome).toEqual({
    children: [{
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "hello-greeting" },
      data: { message: "Hello, world" },
    }],
    status: { configMap: "hello-greeting" },
  });
});
