import { expect } from "expect";
import { Pass } from "./first_pass.ts";

Deno.test("a pass is done once every key of it was visited, once", async () => {
  const pass = new Pass(["a", "b"]);
  let done = false;
  pass.done.then(() => done = true);
  pass.visited("a");
  pass.visited("a");
  pass.visited("zzz");
  await Promise.resolve();
  expect(done).toBe(false);
  pass.visited("b");
  await pass.done;
  expect(done).toBe(true);
});

Deno.test("a pass over nothing is done at once", async () => {
  await new Pass([]).done;
});
