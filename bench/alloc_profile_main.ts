/**
 * The operator's command line with V8's sampling heap profiler on (one sample every
 * SAMPLING_INTERVAL_BYTES allocated), what the collector freed included, so that the profile says
 * where the garbage comes from, not only what stays. The profile (a `.heapprofile`) is written to the file named first
 * once the command returns (after a graceful shutdown). `deno task bench:scale --alloc-prof`
 * starts the operator this way:
 *
 *   deno run <start's flags> --allow-sys --allow-write=FILE \
 *     bench/alloc_profile_main.ts FILE run [flags]
 */
import { Session } from "node:inspector";
import { main } from "../main.ts";

/** Small enough that a visit's allocations show, large enough that sampling barely slows it. */
const SAMPLING_INTERVAL_BYTES = 16_384;

const [file, ...argv] = Deno.args;
const session = new Session();
session.connect();
const post = <T>(method: string, params: object = {}) =>
  new Promise<T>((resolve, reject) =>
    session.post(method, params, (error, result) => error ? reject(error) : resolve(result as T))
  );
await post("HeapProfiler.enable");
await post("HeapProfiler.startSampling", {
  samplingInterval: SAMPLING_INTERVAL_BYTES,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
const code = await main(argv);
const { profile } = await post<{ profile: unknown }>("HeapProfiler.stopSampling");
await Deno.writeTextFile(file, JSON.stringify(profile));
Deno.exit(code);
