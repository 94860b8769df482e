import { expect } from "expect";
import type { Clock } from "../util/clock.ts";
import { ConnectionHealth } from "./connection_health.ts";
import { NetworkError } from "./network_error.ts";

function fakeClock() {
  let now = 1_000;
  const clock: Clock = { monotonicMs: () => now, wallMs: () => now };
  return { clock, tick: (ms: number) => (now += ms) };
}

Deno.test("an idle connection is never judged: silence with nothing waiting is not death", () => {
  const { clock, tick } = fakeClock();
  const health = new ConnectionHealth({ probeAfterMs: 3_000, probeTimeoutMs: 5_000 }, clock);
  tick(600_000);
  expect(health.verdict()).toEqual({ action: "wait" });
  // Counting starts when something starts waiting, not at the last answer long ago.
  const close = health.open();
  expect(health.verdict()).toEqual({ action: "wait", checkInMs: 3_000 });
  tick(2_999);
  expect(health.verdict()).toEqual({ action: "wait", checkInMs: 1 });
  close();
  close(); // twice is once
  expect(health.verdict()).toEqual({ action: "wait" });
});

Deno.test("silence while waiting: a probe, then the connection is replaced if nothing answers", () => {
  const { clock, tick } = fakeClock();
  const health = new ConnectionHealth({ probeAfterMs: 3_000, probeTimeoutMs: 5_000 }, clock);
  health.open();
  tick(3_000);
  expect(health.verdict()).toEqual({ action: "probe" });
  health.probeSent();
  tick(4_000);
  expect(health.verdict()).toEqual({ action: "wait", checkInMs: 1_000 });
  tick(1_000);
  expect(health.verdict()).toEqual({ action: "replace", silentMs: 8_000 });
  // A new connection starts its own count; the old silence says nothing about it.
  health.newConnection();
  expect(health.verdict()).toEqual({ action: "wait", checkInMs: 3_000 });
});

Deno.test("slow is not dead: anything arriving, the probe's answer included, keeps the connection", () => {
  const { clock, tick } = fakeClock();
  const health = new ConnectionHealth({ probeAfterMs: 3_000, probeTimeoutMs: 5_000 }, clock);
  health.open(); // one request that will take a minute
  for (let second = 0; second < 60; second++) {
    const verdict = health.verdict();
    expect(verdict.action).not.toBe("replace");
    if (verdict.action === "probe") health.probeSent();
    tick(1_000);
    // Answers to other requests (or the probe) arrive, each 4 s late.
    if (second % 4 === 3) health.answered();
  }
});

Deno.test("unreachable says since when and why, until anything arrives", () => {
  const { clock, tick } = fakeClock();
  const health = new ConnectionHealth({}, clock);
  expect(health.unreachable()).toBeUndefined();
  const first = new NetworkError("refused", "first");
  health.failed(first);
  tick(2_000);
  const second = new NetworkError("timeout", "second");
  health.failed(second);
  expect(health.unreachable()).toEqual({ forMs: 2_000, error: second });
  expect(health.silentSince(clock.monotonicMs() - 1)).toBe(true);
  health.answered();
  expect(health.unreachable()).toBeUndefined();
  expect(health.silentSince(clock.monotonicMs())).toBe(false);
});

Deno.test("a watches' connection is judged alone, and speaks for the server with its main one", () => {
  const { clock, tick } = fakeClock();
  const main = new ConnectionHealth({ probeAfterMs: 3_000, probeTimeoutMs: 5_000 }, clock);
  const watches = new ConnectionHealth({}, clock);
  watches.follow(main);
  main.configure({ probeAfterMs: 1_000 });
  expect([watches.probeAfterMs, watches.probeTimeoutMs]).toEqual([1_000, 5_000]);
  let recovered = 0;
  main.onRecovered(() => recovered++);
  // A request on the main connection fails; then the server is heard on the watches' connection.
  main.failed(new NetworkError("timeout", "no answer"));
  watches.failed(new NetworkError("reset", "reset"));
  expect(main.unreachable()?.error.message).toBe("reset");
  expect(watches.unreachable()).toEqual(main.unreachable());
  const sent = clock.monotonicMs();
  tick(10);
  watches.answered();
  expect([main.unreachable(), recovered, main.silentSince(sent)]).toEqual([undefined, 1, false]);
  // But the main connection's own silence is still its own: it is asked, then replaced.
  main.open();
  watches.open();
  tick(1_000);
  watches.answered();
  expect(main.verdict()).toEqual({ action: "probe" });
  expect(watches.verdict()).toEqual({ action: "wait", checkInMs: 1_000 });
});
