/**
 * Where a process's allocations came from, summed from a V8 sampling heap profile (a
 * `.heapprofile`, bench/alloc_profile_main.ts): MiB by file and by function. What V8's built-ins
 * allocate (JSON.parse's objects, an array's copy, a promise) is charged to the JavaScript
 * function that called them, as a CPU profile counts their time.
 */

/** The parts of a `.heapprofile` this reads. */
export interface HeapProfile {
  head: HeapProfileNode;
}

interface HeapProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  /** Bytes sampled in this frame itself. */
  selfSize: number;
  children: HeapProfileNode[];
}

/** MiB allocated against a name: a function (`name file`) or a file. */
export interface AllocShare {
  name: string;
  mib: number;
}

export interface AllocSummary {
  /** Everything sampled, in MiB (an estimate of all the process allocated). */
  mib: number;
  /** By the file of the JavaScript that allocated (built-ins charged to their caller). */
  byFile: AllocShare[];
  /** By the JavaScript function that allocated (built-ins charged to their caller). */
  byFunction: AllocShare[];
}

/**
 * Sums `profile`: its `top` largest files and functions. File URLs under `root` are shown
 * relative to it; allocations with no JavaScript above them count as "(no JavaScript)".
 */
export function summarizeAllocProfile(
  profile: HeapProfile,
  options: { root: string; top: number },
): AllocSummary {
  const byFile = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  const add = (map: Map<string, number>, name: string, bytes: number) =>
    map.set(name, (map.get(name) ?? 0) + bytes);
  // Depth first with an explicit stack: a deep profile must not overflow the call stack.
  const stack: { node: HeapProfileNode; owner?: { file: string; fn: string } }[] = [
    { node: profile.head },
  ];
  while (stack.length) {
    const { node, owner: above } = stack.pop()!;
    const { url, functionName } = node.callFrame;
    const file = url.startsWith(options.root) ? url.slice(options.root.length) : url;
    const owner = url ? { file, fn: `${functionName || "(anonymous)"} ${file}` } : above;
    total += node.selfSize;
    if (node.selfSize) {
      add(byFile, owner?.file ?? "(no JavaScript)", node.selfSize);
      add(byFunction, owner?.fn ?? "(no JavaScript)", node.selfSize);
    }
    for (const child of node.children) stack.push({ node: child, owner });
  }
  const largest = (map: Map<string, number>) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, options.top).map(([name, bytes]) => ({
      name,
      mib: Math.round(bytes / 1048576 * 10) / 10,
    }));
  return {
    mib: Math.round(total / 1048576 * 10) / 10,
    byFile: largest(byFile),
    byFunction: largest(byFunction),
  };
}
