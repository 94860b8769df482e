import { expect } from "expect";
import * as FakeTimers from "@sinonjs/fake-timers";
import { SilenceWatchdog } from "./silence_watchdog.ts";

Deno.test("the watchdog fires once nothing was heard for its time, and each event starts it over", () => {
  const time = FakeTimers.install({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  try {
    let fired = 0;
    const watchdog = new SilenceWatchdog(1_000, () => fired++);
    time.tick(900);
    watchdog.heard();
    time.tick(900);
    expect(watchdog.silent).toBe(false);
    time.tick(100);
    expect([watchdog.silent, fired]).toEqual([true, 1]);
    // A watch that never delivers anything is silent too; a stopped one never.
    const mute = new SilenceWatchdog(500, () => fired++);
    const ended = new SilenceWatchdog(500, () => fired++);
    ended.stop();
    time.tick(500);
    expect([mute.silent, ended.silent, fired]).toEqual([true, false, 2]);
    expect(time.countTimers()).toBe(0);
  } finally {
    time.uninstall();
  }
});

Deno.test("a busy watch sets its timer about once a silence period, not once an event", () => {
  const time = FakeTimers.install({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  const fakeSetTimeout = globalThis.setTimeout;
  let set = 0;
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    set++;
    return fakeSetTimeout(...args);
  }) as typeof setTimeout;
  try {
    let fired = 0;
    const watchdog = new SilenceWatchdog(1_000, () => fired++);
    for (let i = 0; i < 3_000; i++) {
      time.tick(1);
      watchdog.heard();
    }
    // Set when made, and again each time it came due and found an event since: 4, not 3001.
    expect(set).toBe(4);
    // The last event came at 3000 ms: silent at 4000, not before.
    time.tick(999);
    expect([watchdog.silent, fired]).toEqual([false, 0]);
    time.tick(1);
    expect([watchdog.silent, fired]).toEqual([true, 1]);
    expect(time.countTimers()).toBe(0);
  } finally {
    globalThis.setTimeout = fakeSetTimeout;
    time.uninstall();
  }
});
