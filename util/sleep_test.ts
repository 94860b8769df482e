import { expect } from "expect";
import { sleep, whenAborted, withinMs } from "./sleep.ts";

Deno.test("sleep ends early, without an error, when its signal aborts", async () => {
  const stop = new AbortController();
  const waiting = sleep(60_000, stop.signal);
  stop.abort();
  await waiting;
  await sleep(10, stop.signal);
});

Deno.test("whenAborted resolves on abort, at once for an aborted signal", async () => {
  const stop = new AbortController();
  let done = false;
  const waiting = whenAborted(stop.signal).then(() => done = true);
  await sleep(1);
  expect(done).toBe(false);
  stop.abort();
  await waiting;
  await whenAborted(stop.signal);
});

Deno.test("withinMs gives up on a promise that never settles, and waits for one that does", async () => {
  await withinMs(new Promise(() => {}), 5);
  let settled = false;
  await withinMs(sleep(1).then(() => settled = true), 60_000);
  expect(settled).toBe(true);
});
