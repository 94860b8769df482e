import { expect } from "expect";
import * as FakeTimers from "@sinonjs/fake-timers";
import { SilenceWatchdog } from "./silence_watchdog.ts";

Deno.test("the watchdog fires once nothing was heard for its time, and each event starts it over", () => {
  const time = FakeTimers.install({ toFake: ["setTimeout", "clearTimeout"] });
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
