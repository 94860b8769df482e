import { sleep } from "../../util/sleep.ts";
import { expect } from "expect";
import { ApiError } from "../../kube/errors.ts";
import { NetworkError } from "../../kube/network_error.ts";
import type { Logger } from "./logging.ts";
import { causeOf, WarningThrottle } from "./warning_throttle.ts";

function recorder() {
  const lines: { message: string; properties: Record<string, unknown> }[] = [];
  const log = {
    warn: (message: string, properties: Record<string, unknown>) =>
      lines.push({ message, properties }),
  } as unknown as Logger;
  return { log, lines };
}

Deno.test("one line per cause per interval, then the count of repeats", async () => {
  const { log, lines } = recorder();
  const throttle = new WarningThrottle(log, 100);
  for (let i = 0; i < 50; i++) {
    throttle.warn("network refused", "watch of {kind} failed", { kind: `K${i}` });
  }
  throttle.warn("api 500 InternalError", "other trouble");
  expect(lines.map((l) => l.message)).toEqual(["watch of {kind} failed", "other trouble"]);
  await sleep(150);
  expect(lines).toHaveLength(3);
  expect(lines[2]).toEqual({
    message: "watch of {kind} failed ({repeats} more times in {seconds} s)",
    properties: { kind: "K49", repeats: 49, seconds: 0.1 },
  });
  // A quiet interval closes the window: the next occurrence is logged at once.
  await sleep(150);
  throttle.warn("network refused", "watch of {kind} failed", { kind: "again" });
  expect(lines.at(-1)).toEqual({
    message: "watch of {kind} failed",
    properties: { kind: "again" },
  });
  throttle.flush();
});

Deno.test("flush reports what is pending and forgets it", () => {
  const { log, lines } = recorder();
  const throttle = new WarningThrottle(log, 60_000);
  throttle.warn("c", "m");
  throttle.warn("c", "m");
  throttle.flush();
  expect(lines.map((l) => l.properties.repeats)).toEqual([undefined, 1]);
});

Deno.test("failures with one cause share it, whatever object they were about", () => {
  const refused = (object: string) => new NetworkError("refused", `refused (${object})`);
  expect(causeOf(refused("a"))).toBe(causeOf(refused("b")));
  const conflict = (name: string) =>
    new ApiError({ code: 409, reason: "Conflict", message: `${name} changed` });
  expect(causeOf(conflict("a"))).toBe("api 409 Conflict");
  expect(causeOf(conflict("a"))).toBe(causeOf(conflict("b")));
  expect(causeOf(new Error("boom"))).toBe("Error: boom");
});
