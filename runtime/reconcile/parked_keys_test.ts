import { expect } from "expect";
import { ParkedKeys } from "./parked_keys.ts";

function cache() {
  let fresh!: () => void;
  const listed = new Promise<void>((resolve) => fresh = resolve);
  return { whenFresh: () => listed, fresh: () => fresh() };
}

Deno.test("a parked key wakes once its cache has listed again, once", async () => {
  const woken: string[] = [];
  const parked = new ParkedKeys((key) => woken.push(key));
  const pods = cache();
  parked.park("a", [pods]);
  parked.park("b", [pods]);
  parked.park("a", [pods]);
  expect(parked.size).toBe(2);
  await Promise.resolve();
  expect(woken).toEqual([]);
  pods.fresh();
  await pods.whenFresh();
  await Promise.resolve();
  expect(woken).toEqual(["a", "b"]);
  expect(parked.size).toBe(0);
});

Deno.test("a key behind two caches wakes as each lists (a visit then looks at both)", async () => {
  const woken: string[] = [];
  const parked = new ParkedKeys((key) => woken.push(key));
  const [pods, nodes] = [cache(), cache()];
  parked.park("a", [pods, nodes]);
  pods.fresh();
  await pods.whenFresh();
  await Promise.resolve();
  expect(woken).toEqual(["a"]);
  nodes.fresh();
  await nodes.whenFresh();
  await Promise.resolve();
  expect(woken).toEqual(["a", "a"]);
});
