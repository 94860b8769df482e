import { expect } from "expect";
import { type CpuProfile, summarizeCpuProfile } from "./cpu_profile.ts";

const ROOT = "file:///repo/";
const frame = (functionName: string, url = "", lineNumber = 0) => ({
  functionName,
  url,
  lineNumber,
});

/** root → visit (ours) → parse (ours, recursive) → parse; root → log (a package); idle; GC. */
const PROFILE: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame("(root)"), children: [2, 5, 6, 7] },
    { id: 2, callFrame: frame("visit", `${ROOT}runtime/visitor.ts`, 9), children: [3] },
    { id: 3, callFrame: frame("parse", `${ROOT}kube/watch.ts`, 37), children: [4] },
    { id: 4, callFrame: frame("parse", `${ROOT}kube/watch.ts`, 37) },
    {
      id: 5,
      callFrame: frame(
        "emit",
        "file:///home/u/.cache/deno/npm/registry.npmjs.org/@logtape/logtape/2.4.2/dist/logger.js",
        100,
      ),
    },
    { id: 6, callFrame: frame("(idle)") },
    { id: 7, callFrame: frame("(garbage collector)") },
  ],
  samples: [2, 3, 4, 4, 5, 6, 6, 6, 6, 7],
  timeDeltas: [1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6],
};

Deno.test("a profile splits into idle, the collector and busy time", () => {
  const summary = summarizeCpuProfile(PROFILE, { root: ROOT });
  expect(summary).toMatchObject({ seconds: 10, idleSeconds: 4, gcSeconds: 1, busySeconds: 5 });
});

Deno.test("own time by function and by file (ties by name), a package counted as one file, idle left out", () => {
  const summary = summarizeCpuProfile(PROFILE, { root: ROOT });
  expect(summary.selfByFunction).toEqual([
    { name: "parse kube/watch.ts:38", seconds: 3 },
    { name: "(garbage collector)", seconds: 1 },
    { name: "emit npm:@logtape/logtape@2.4.2", seconds: 1 },
    { name: "visit runtime/visitor.ts:10", seconds: 1 },
  ]);
  expect(summary.selfByFile[0]).toEqual({ name: "kube/watch.ts", seconds: 3 });
  expect(summary.selfByFile).toContainEqual({ name: "npm:@logtape/logtape@2.4.2", seconds: 1 });
});

Deno.test("time inside a function counts what it called, a recursive one once", () => {
  const inside = summarizeCpuProfile(PROFILE, { root: ROOT, top: 2 }).insideFunction;
  expect(inside).toEqual([
    { name: "visit runtime/visitor.ts:10", seconds: 4 },
    { name: "parse kube/watch.ts:38", seconds: 3 },
  ]);
});

Deno.test("a stretch: only the samples taken from its first second to its last", () => {
  const after = summarizeCpuProfile(PROFILE, { root: ROOT, fromSeconds: 4 });
  expect(after).toMatchObject({ seconds: 7, idleSeconds: 4, gcSeconds: 1, busySeconds: 2 });
  expect(after.selfByFunction.map((s) => s.name)).not.toContain("visit runtime/visitor.ts:10");
  const before = summarizeCpuProfile(PROFILE, { root: ROOT, toSeconds: 4 });
  expect(before).toMatchObject({ seconds: 3, idleSeconds: 0, gcSeconds: 0, busySeconds: 3 });
  const middle = summarizeCpuProfile(PROFILE, { root: ROOT, fromSeconds: 5, toSeconds: 7 });
  expect(middle).toMatchObject({ seconds: 2, idleSeconds: 1, busySeconds: 1 });
});
