import { expect } from "expect";
import { Quarantine } from "./quarantine.ts";

Deno.test("a key is put aside after three timeouts in a row, until its generation changes", () => {
  const quarantine = new Quarantine(3);
  const at = { generation: 4, resourceVersion: "10" };
  expect(quarantine.timedOut("ns/a", at)).toEqual({ quarantined: false, timeouts: 1 });
  expect(quarantine.timedOut("ns/a", at)).toEqual({ quarantined: false, timeouts: 2 });
  expect(quarantine.holds("ns/a", at)).toBe(false);
  expect(quarantine.timedOut("ns/a", at)).toEqual({ quarantined: true, timeouts: 3 });
  // Status writes move the resourceVersion, not the generation: still held.
  expect(quarantine.holds("ns/a", { generation: 4, resourceVersion: "11" })).toBe(true);
  expect(quarantine.holds("ns/b", at)).toBe(false);
  expect(quarantine.holds("ns/a", { generation: 5, resourceVersion: "12" })).toBe(false);
  // Released: the count starts over.
  expect(quarantine.timedOut("ns/a", { generation: 5 })).toEqual({
    quarantined: false,
    timeouts: 1,
  });
});

Deno.test("a visit within its deadline starts the count over; kinds without generation use the resourceVersion", () => {
  const quarantine = new Quarantine(2);
  quarantine.timedOut("a", { resourceVersion: "1" });
  quarantine.finished("a");
  expect(quarantine.timedOut("a", { resourceVersion: "1" }).quarantined).toBe(false);
  expect(quarantine.timedOut("a", { resourceVersion: "1" }).quarantined).toBe(true);
  expect(quarantine.holds("a", { resourceVersion: "1" })).toBe(true);
  expect(quarantine.holds("a", undefined)).toBe(false);
  expect(quarantine.size).toBe(0);
});
