import { expect } from "expect";
import { assetPath, readAsset } from "./asset.ts";

Deno.test("assets are read from a checkout, or fetched from where the harness was imported", async () => {
  const local = new URL("./assets/kwok_stages_fast.yaml", import.meta.url);
  const text = await Deno.readTextFile(local);
  expect(await readAsset(local)).toBe(text);
  expect(await assetPath(local, "/nonexistent/copy.yaml")).toBe(local.pathname);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) =>
      new URL(request.url).pathname === "/testing/assets/kwok_stages_fast.yaml"
        ? new Response(text, { headers: { "content-type": "text/plain" } })
        : new Response("404: Not Found", { status: 404 }),
  );
  const dir = await Deno.makeTempDir();
  try {
    const base = `http://127.0.0.1:${server.addr.port}/testing/assets/`;
    const remote = new URL("kwok_stages_fast.yaml", base);
    expect(await readAsset(remote)).toBe(text);
    const copy = await assetPath(remote, `${dir}/stages.yaml`);
    expect(await Deno.readTextFile(copy)).toBe(text);
    await expect(readAsset(new URL("missing.yaml", base))).rejects.toThrow(
      /cannot fetch http:\/\/127\.0\.0\.1:\d+\/testing\/assets\/missing\.yaml: 404/,
    );
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
