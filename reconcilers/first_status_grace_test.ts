import { expect } from "expect";
import {
  FIRST_STATUS_GRACE_MS as GRACE,
  firstStatusWaitMs,
  type FirstStatusWorld,
} from "./first_status_grace.ts";

const world = (changes: Partial<FirstStatusWorld>): FirstStatusWorld => ({
  waitedMs: 1_000,
  reported: false,
  missing: false,
  unobserved: true,
  outcomeKnown: false,
  controllerSeen: () => true,
  ...changes,
});

Deno.test("first status: written at once when reported before, or when the children are as they will be", () => {
  expect(firstStatusWaitMs(world({ reported: true, missing: true }))).toBe(0);
  expect(firstStatusWaitMs(world({ unobserved: false }))).toBe(0);
  // No node has its labels: the DaemonSet controller will schedule nothing, so its word is known.
  expect(firstStatusWaitMs(world({ outcomeKnown: true }))).toBe(0);
});

Deno.test("first status: a missing child waits longest, even when the outcome is known", () => {
  expect(firstStatusWaitMs(world({ missing: true, outcomeKnown: true }))).toBe(
    GRACE.childrenMissing - 1_000,
  );
  expect(firstStatusWaitMs(world({ missing: true, waitedMs: GRACE.childrenMissing + 1 }))).toBe(0);
});

Deno.test("first status: the DaemonSet controller is looked for past the short grace only", () => {
  let looked = 0;
  const seen = (answer: boolean) => () => (looked++, answer);
  expect(firstStatusWaitMs(world({ waitedMs: 1_000, controllerSeen: seen(true) })))
    .toBe(GRACE.otherwise - 1_000);
  expect(looked).toBe(0);
  expect(firstStatusWaitMs(world({ waitedMs: GRACE.otherwise, controllerSeen: seen(true) })))
    .toBe(GRACE.controllerSeen - GRACE.otherwise);
  expect(firstStatusWaitMs(world({ waitedMs: GRACE.otherwise, controllerSeen: seen(false) })))
    .toBe(0);
  expect(looked).toBe(2);
  expect(firstStatusWaitMs(world({ waitedMs: GRACE.controllerSeen }))).toBe(0);
});
