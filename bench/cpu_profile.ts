/**
 * Where a process's main thread spent its time, summed from the V8 CPU profile `deno run
 * --cpu-prof` writes at exit (a `.cpuprofile`): idle, garbage collection, and the functions and
 * files that ran, by their own time and by the time spent inside them.
 */

/** The parts of a `.cpuprofile` this reads. */
export interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[];
  samples: number[];
  /** µs since the sample before, one per sample. */
  timeDeltas: number[];
}

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

/** Seconds against a name: a function (`name file:line`) or a file. */
export interface Share {
  name: string;
  seconds: number;
}

export interface ProfileSummary {
  /** The profile's length. */
  seconds: number;
  /** Waiting for I/O or a timer. */
  idleSeconds: number;
  /** V8's collector on the main thread (its helper threads are not sampled). */
  gcSeconds: number;
  /** Everything else: running code, ours, the runtime's or a package's. */
  busySeconds: number;
  /** Time in each function itself, largest first. */
  selfByFunction: Share[];
  /** Time in each file's code itself (a package counted as one), largest first. */
  selfByFile: Share[];
  /** Time in each function or what it called, largest first. */
  insideFunction: Share[];
}

const IDLE = "(idle)";
const GC = "(garbage collector)";

/**
 * Sums `profile`, keeping the `top` largest of each list; `root` is cut from file names. With
 * `fromSeconds` and `toSeconds` (after the profile began), only the samples of that stretch: while
 * the children are made, say.
 */
export function summarizeCpuProfile(
  profile: CpuProfile,
  options: { top?: number; root?: string; fromSeconds?: number; toSeconds?: number } = {},
): ProfileSummary {
  const top = options.top ?? 25;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  }
  const from = (options.fromSeconds ?? 0) * 1e6;
  const to = (options.toSeconds ?? Infinity) * 1e6;
  const timeOf = new Map<number, number>();
  let at = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (at >= from && at < to) timeOf.set(id, (timeOf.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });

  const self = new Map<string, number>();
  const files = new Map<string, number>();
  const inside = new Map<string, number>();
  const add = (into: Map<string, number>, key: string, us: number) =>
    into.set(key, (into.get(key) ?? 0) + us);
  let total = 0;
  for (const [id, us] of timeOf) {
    total += us;
    const frame = byId.get(id)!.callFrame;
    add(self, functionName(frame, options.root), us);
    add(files, fileName(frame, options.root), us);
    // Once per function on the stack, so recursion is not counted twice.
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const name = functionName(byId.get(at)!.callFrame, options.root);
      if (seen.has(name) || name === "(root)") continue;
      seen.add(name);
      add(inside, name, us);
    }
  }
  const idle = self.get(IDLE) ?? 0;
  const gc = self.get(GC) ?? 0;
  const largest = (from: Map<string, number>) =>
    [...from].filter(([name]) => name !== IDLE)
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, top)
      .map(([name, us]) => ({ name, seconds: seconds(us) }));
  return {
    seconds: seconds(total),
    idleSeconds: seconds(idle),
    gcSeconds: seconds(gc),
    busySeconds: seconds(total - idle - gc),
    selfByFunction: largest(self),
    selfByFile: largest(files),
    insideFunction: largest(inside),
  };
}

function seconds(us: number): number {
  return Math.round(us / 1e4) / 100;
}

function fileName(frame: CallFrame, root?: string): string {
  const url = frame.url;
  if (!url) return frame.functionName;
  const pkg = url.match(/\/npm\/[^/]+\/((?:@[^/]+\/)?[^/]+)\/([^/]+)\//);
  if (pkg) return `npm:${pkg[1]}@${pkg[2]}`;
  return root && url.startsWith(root) ? url.slice(root.length) : url;
}

function functionName(frame: CallFrame, root?: string): string {
  if (!frame.url) return frame.functionName;
  const file = fileName(frame, root);
  const where = file.startsWith("npm:") ? file : `${file}:${frame.lineNumber + 1}`;
  return `${frame.functionName || "(anonymous)"} ${where}`;
}
