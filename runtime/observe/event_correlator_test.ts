import { expect } from "expect";
import { COMBINED_PREFIX, EventCorrelator } from "./event_correlator.ts";

Deno.test("messages that keep changing combine after ten, per object, type and reason", () => {
  const correlator = new EventCorrelator({ maxSimilar: 10, windowMs: 600_000 });
  const at = (n: number) => correlator.message("uid-1", "Warning", "Failed", `try ${n}`, n);
  const messages = Array.from({ length: 14 }, (_, n) => at(n));
  expect(messages.slice(0, 10)).toEqual(Array.from({ length: 10 }, (_, n) => `try ${n}`));
  expect(messages[12]).toBe(`${COMBINED_PREFIX}try 12`);
  // A message seen before stays itself (it aggregates with its earlier Event).
  expect(correlator.message("uid-1", "Warning", "Failed", "try 3", 20)).toBe("try 3");
  // Another reason, or another object, is counted apart.
  expect(correlator.message("uid-1", "Warning", "Other", "x", 21)).toBe("x");
  expect(correlator.message("uid-2", "Warning", "Failed", "try 99", 22)).toBe("try 99");
  // After the window, they are news again.
  expect(correlator.message("uid-1", "Warning", "Failed", "try 50", 700_000)).toBe("try 50");
});

Deno.test("a flood about one object: a burst, then one write per interval", () => {
  const correlator = new EventCorrelator({ burst: 25, refillMs: 300_000 });
  const admitted = Array.from({ length: 100 }, () => correlator.admit("uid-1", 0))
    .filter(Boolean).length;
  expect(admitted).toBe(25);
  expect(correlator.admit("uid-2", 0)).toBe(true);
  expect(correlator.admit("uid-1", 299_000)).toBe(false);
  expect(correlator.admit("uid-1", 300_000)).toBe(true);
  expect(correlator.admit("uid-1", 300_001)).toBe(false);
  // Idle long enough to be full again: forgotten, and the full burst is there.
  correlator.sweep(30 * 300_000);
  expect(Array.from({ length: 30 }, () => correlator.admit("uid-1", 30 * 300_000)).filter(Boolean))
    .toHaveLength(25);
});
