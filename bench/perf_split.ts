/**
 * Splits what Linux `perf` sampled of a Deno process into where its CPU went: JavaScript, V8's
 * and Deno's native code called from JavaScript, Deno's runtime outside JavaScript (the event
 * loop, HTTP, TLS), the kernel, and V8's helper threads. Reads `perf script -F tid,ip,sym,dso`
 * of a process started with `--v8-flags=--perf-basic-prof` (which names its generated code).
 */

/** One part's share of the samples, 0 to 1. */
export interface PerfShare {
  name: string;
  share: number;
}

/** What the samples of one process say. */
export interface PerfSplit {
  samples: number;
  /** The five parts, in the order of the module doc; they sum to 1. */
  parts: PerfShare[];
  /**
   * The JavaScript functions that called the native code of the second part (the nearest
   * JavaScript frame above it), largest first: what asked V8 and Deno for the work.
   */
  nativeCallers: PerfShare[];
}

export const PERF_PARTS = [
  "JavaScript (interpreted, compiled, V8's builtins)",
  "native code called from JavaScript (JSON parsing, the collector, hashing, Deno's ops)",
  "Deno's runtime outside JavaScript (event loop, HTTP, TLS)",
  "the kernel (system calls, scheduling)",
  "V8's helper threads (collector, compiler)",
] as const;

interface Frame {
  symbol: string;
  dso: string;
}

/** Which process the samples are of, and how to name its functions. */
export interface SplitOptions {
  /** The process: its main thread is the thread whose id is the pid. */
  pid: number;
  /** Cut from the front of file URLs (the checkout's `file:///…/`). */
  root?: string;
  /** How many callers of native code to keep (default 12). */
  top?: number;
}

/** Splits `script`, the text of `perf script -F tid,ip,sym,dso` with call chains. */
export function splitPerfSamples(script: string, options: SplitOptions): PerfSplit {
  const { pid, root = "", top = 12 } = options;
  const counts = new Array<number>(PERF_PARTS.length).fill(0);
  const callers = new Map<string, number>();
  let samples = 0;
  for (const block of script.split(/\n\s*\n/)) {
    const lines = block.split("\n").filter((line) => line.trim());
    if (lines.length === 0) continue;
    const tid = Number(lines[0].trim().split(/\s+/)[0]);
    if (!Number.isInteger(tid)) continue;
    const frames = lines.slice(1).map(frameOf);
    if (frames.length === 0) continue;
    samples++;
    if (tid !== pid) {
      counts[4]++;
      continue;
    }
    const [leaf] = frames;
    if (leaf.dso.includes("kernel")) {
      counts[3]++;
    } else if (isGenerated(leaf)) {
      counts[0]++;
    } else {
      const caller = frames.find((frame) => isGenerated(frame) && frame.symbol.startsWith("JS:"));
      if (caller || frames.some(isGenerated)) {
        counts[1]++;
        const name = caller ? functionOf(caller.symbol, root) : "(a builtin)";
        callers.set(name, (callers.get(name) ?? 0) + 1);
      } else {
        counts[2]++;
      }
    }
  }
  const share = (n: number) => samples ? n / samples : 0;
  return {
    samples,
    parts: PERF_PARTS.map((name, i) => ({ name, share: share(counts[i]) })),
    nativeCallers: [...callers].sort((a, b) => b[1] - a[1]).slice(0, top)
      .map(([name, n]) => ({ name, share: share(n) })),
  };
}

/** `ip symbol (dso)`, the symbol possibly with spaces. */
function frameOf(line: string): Frame {
  const text = line.trim();
  const open = text.lastIndexOf(" (");
  const dso = open >= 0 && text.endsWith(")") ? text.slice(open + 2, -1) : "";
  const rest = open >= 0 ? text.slice(0, open) : text;
  const space = rest.indexOf(" ");
  return { symbol: space >= 0 ? rest.slice(space + 1) : "", dso };
}

/** Code V8 generated or copied at run time, named in its perf map (`/tmp/perf-PID.map`). */
function isGenerated(frame: Frame): boolean {
  return /perf-\d+\.map$/.test(frame.dso) || frame.dso.startsWith("[JIT]");
}

/**
 * `JS:+'watchEvents file:///repo/kube/watch.ts:25:39` → `watchEvents kube/watch.ts` (the line
 * and column are of the JavaScript Deno made of the TypeScript, so they are dropped).
 */
function functionOf(symbol: string, root: string): string {
  const body = symbol.replace(/^JS:[*+~^]?'?/, "");
  const space = body.indexOf(" ");
  const name = (space >= 0 ? body.slice(0, space) : body) || "(anonymous)";
  const location = space >= 0 ? body.slice(space + 1) : "";
  const file = (root && location.startsWith(root) ? location.slice(root.length) : location)
    .replace(/(:\d+)+$/, "");
  return file ? `${name} ${file}` : name;
}
