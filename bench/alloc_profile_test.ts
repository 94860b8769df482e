import { expect } from "expect";
import { type HeapProfile, summarizeAllocProfile } from "./alloc_profile.ts";

const MIB = 1048576;
const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 0 });

Deno.test("allocations by file and function, a built-in's charged to its JavaScript caller", () => {
  const profile: HeapProfile = {
    head: {
      callFrame: frame("(root)", ""),
      selfSize: 0,
      children: [
        {
          callFrame: frame("watchEvents", "file:///repo/kube/watch.ts"),
          selfSize: 1 * MIB,
          children: [
            // JSON.parse: a built-in, no URL.
            { callFrame: frame("parse", ""), selfSize: 3 * MIB, children: [] },
            {
              callFrame: frame("decode", "ext:deno_web/08_text_encoding.js"),
              selfSize: 2 * MIB,
              children: [],
            },
          ],
        },
        { callFrame: frame("(V8 API)", ""), selfSize: 0.5 * MIB, children: [] },
      ],
    },
  };
  expect(summarizeAllocProfile(profile, { root: "file:///repo/", top: 10 })).toEqual({
    mib: 6.5,
    byFile: [
      { name: "kube/watch.ts", mib: 4 },
      { name: "ext:deno_web/08_text_encoding.js", mib: 2 },
      { name: "(no JavaScript)", mib: 0.5 },
    ],
    byFunction: [
      { name: "watchEvents kube/watch.ts", mib: 4 },
      { name: "decode ext:deno_web/08_text_encoding.js", mib: 2 },
      { name: "(no JavaScript)", mib: 0.5 },
    ],
  });
  expect(summarizeAllocProfile(profile, { root: "file:///repo/", top: 1 }).byFile).toEqual([
    { name: "kube/watch.ts", mib: 4 },
  ]);
});
