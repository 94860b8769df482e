import { expect } from "expect";
import { checkoutHere, chooseRuntime, RELEASE_URL } from "./runtime_reference.ts";
import { VERSION } from "./version.ts";

const checkout = new URL("../", import.meta.url).pathname.replace(/\/$/, "");

Deno.test("a checkout is this module's folder under deno run; a binary or a URL import has none", () => {
  expect(checkoutHere()).toBe(checkout);
  expect(checkoutHere(import.meta.url, true)).toBeUndefined();
  expect(checkoutHere(`${RELEASE_URL}cli/runtime_reference.ts`, false)).toBeUndefined();
});

Deno.test("without a checkout the default is this version's release, checked before anything", async () => {
  const asked: string[] = [];
  const served = await chooseRuntime({
    target: "/tmp/op",
    checkout: undefined,
    fetchRuntime: (url) => {
      asked.push(url);
      return Promise.resolve(new Response("export { definePlugin } from './x.ts';"));
    },
  });
  expect(asked).toEqual([`${RELEASE_URL}mod.ts`]);
  expect(served.runtime).toBe(RELEASE_URL);
  // Not released (no tag yet), or offline: refused at once, saying how to do without it.
  const unreleased = chooseRuntime({
    target: "/tmp/op",
    checkout: undefined,
    fetchRuntime: () => Promise.resolve(new Response("404: Not Found", { status: 404 })),
  });
  await expect(unreleased).rejects.toThrow(
    `404 Not Found (is v${VERSION} released? Its tag must exist on GitHub). Use a ` +
      "ptemplate-operator checkout instead: --runtime <path to a clone of " +
      "github.com/ptemplate/ptemplate-operator> (its files are imported from disk",
  );
  const offline = chooseRuntime({
    target: "/tmp/op",
    checkout: undefined,
    fetchRuntime: () => Promise.reject(new TypeError("dns error: failed to lookup address")),
  });
  await expect(offline).rejects.toThrow(/mod\.ts: dns error: failed to lookup address\. Use a/);
  // Something that answers, but is not the runtime.
  const elsewhere = chooseRuntime({
    given: "https://example.com/x",
    target: "/tmp/op",
    checkout,
    fetchRuntime: () => Promise.resolve(new Response("<html>")),
  });
  await expect(elsewhere).rejects.toThrow(
    `https://example.com/x/mod.ts: it answers, but not with the runtime's mod.ts. Use a ` +
      `ptemplate-operator checkout instead: --runtime ${checkout} (`,
  );
});

Deno.test("a checkout's folder is named relative to the new operator when near, else absolute", async () => {
  const near = await chooseRuntime({ given: checkout, target: `${checkout}/../op` });
  expect(near.runtime).toMatch(/^\.\.\/[^/]+\/$/);
  const far = await chooseRuntime({ given: checkout, target: "/a/b/c/d/e/op" });
  expect(far.runtime).toBe(`${checkout}/`);
  await expect(chooseRuntime({ given: "/tmp", target: "/tmp/op" })).rejects.toThrow(
    "--runtime /tmp has no mod.ts",
  );
});
