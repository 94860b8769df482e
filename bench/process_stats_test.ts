import { expect } from "expect";
import { parseThreadStats } from "../testing/process.ts";
import { threadCpuByName } from "./process_stats.ts";

/** A `/proc/PID/task/TID/stat` line: utime and stime are the 14th and 15th fields. */
const stat = (tid: number, name: string, utime: number, stime: number) =>
  `${tid} (${name}) S 1 ${tid} 1 0 -1 4194560 100 0 0 0 ${utime} ${stime} 0 0 20 0 9 0 5 1 1`;

Deno.test("threads' CPU is summed by name, user and system apart, largest first", () => {
  const text = [
    stat(10, "deno", 250, 30),
    stat(11, "V8 DefaultWorke", 40, 5),
    stat(12, "V8 DefaultWorke", 45, 2),
    stat(13, "tokio-runtime-w", 0, 0),
    "",
  ].join("\n");
  expect(threadCpuByName(parseThreadStats(text))).toEqual([
    { name: "deno", user: 2.5, system: 0.3 },
    { name: "V8 DefaultWorke", user: 0.85, system: 0.07 },
    { name: "tokio-runtime-w", user: 0, system: 0 },
  ]);
});

Deno.test("a thread name with a space and a parenthesis is read whole", () => {
  expect(parseThreadStats(stat(7, "a) b", 100, 3))).toEqual([
    { tid: 7, name: "a) b", userTicks: 100, systemTicks: 3 },
  ]);
});
