import { expect } from "expect";
import { PERF_PARTS, splitPerfSamples } from "./perf_split.ts";

const DENO = "(/opt/deno/deno)";
const MAP = "(/tmp/perf-100.map)";

/** `perf script -F tid,ip,sym,dso` of process 100: one sample of each part, and one more. */
const SCRIPT = [
  // JavaScript at the leaf, the event loop below it.
  `100 \n\t 7f01 JS:+'watchEvents file:///repo/kube/watch.ts:25:39 ${MAP}\n\t 1b91 [unknown] ${DENO}`,
  // Native code (JSON parsing, say) called from a JavaScript function, through a builtin.
  `100 \n\t 3615 [unknown] ${DENO}\n\t 7f02 Builtin:JsonParse ${MAP}\n\t 7f01 JS:^ file:///repo/kube/watch.ts:25:39 ${MAP}`,
  `100 \n\t 3616 [unknown] ${DENO}\n\t 7f03 JS:+'#number file:///repo/runtime/cache/interner.ts:143:93 ${MAP}`,
  // Native code with no JavaScript above it: the runtime's own loop.
  `100 \n\t 2724 __libc_start_call_main (/usr/lib/libc.so.6)\n\t 1b91 [unknown] ${DENO}`,
  // The kernel, on the main thread.
  `100 \n\tffffffff81 finish_task_switch.isra.0 ([kernel.kallsyms])\n\t 1b91 [unknown] ${DENO}`,
  // Another thread: one of V8's helpers.
  `101 \n\t 3999 [unknown] ${DENO}`,
].join("\n\n") + "\n\n";

Deno.test("perf samples split into the five parts, by leaf, thread and the frames above", () => {
  const split = splitPerfSamples(SCRIPT, { pid: 100, root: "file:///repo/" });
  expect(split.samples).toBe(6);
  expect(split.parts.map((part) => part.name)).toEqual([...PERF_PARTS]);
  expect(split.parts.map((part) => Math.round(part.share * 6))).toEqual([1, 2, 1, 1, 1]);
});

Deno.test("native code is charged to the nearest JavaScript function above it, named short", () => {
  const split = splitPerfSamples(SCRIPT, { pid: 100, root: "file:///repo/" });
  expect(split.nativeCallers.map((caller) => caller.name)).toEqual([
    "(anonymous) kube/watch.ts",
    "#number runtime/cache/interner.ts",
  ]);
});

Deno.test("no samples: no shares, and no division by zero", () => {
  const split = splitPerfSamples("", { pid: 1 });
  expect(split.samples).toBe(0);
  expect(split.parts.map((part) => part.share)).toEqual([0, 0, 0, 0, 0]);
});
