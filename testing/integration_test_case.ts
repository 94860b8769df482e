/**
 * Declares a Deno test that runs against a fresh control plane, keeps its logs when it fails,
 * and skips only outside CI when the binaries cannot be had (saying so loudly).
 */
import { type Binaries, BinariesUnavailable, findBinaries } from "./binaries.ts";
import { inCi } from "./ci.ts";
import { ControlPlane, type ControlPlaneOptions } from "./control_plane.ts";
import { withinMs } from "../util/sleep.ts";

/**
 * How long one integration test may run. The longest takes minutes on a cold, busy machine; one
 * that hangs must fail with its name and let the rest of the suite finish inside CI's time.
 */
const TEST_DEADLINE_MS = 30 * 60_000;

/**
 * The deadline of a whole binaries test: an integration test's own fires first, inside it, so
 * that its control plane is still stopped; this one only if stopping hangs too.
 */
const OUTER_DEADLINE_MS = TEST_DEADLINE_MS + 2 * 60_000;

/** Waits for `run`, or fails once `deadlineMs` has passed without it settling. */
export async function beforeDeadline<T>(
  name: string,
  run: Promise<T>,
  deadlineMs = TEST_DEADLINE_MS,
): Promise<T> {
  let settled = false;
  const watched = run.finally(() => settled = true);
  await withinMs(watched.catch(() => {}), deadlineMs);
  if (!settled) {
    throw new Error(
      `"${name}" still runs after ${deadlineMs / 1000} s: something it awaits never settles ` +
        `(its components' logs are kept)`,
    );
  }
  return await watched;
}

/** Runs `name` as a test step and remembers whether it failed. */
export type Step = (name: string, fn: () => void | Promise<void>) => Promise<boolean>;

let availability: Promise<{ binaries: Binaries } | { error: Error }> | undefined;

/** Finds (building if needed) the binaries once per process. */
function binariesOnce(): Promise<{ binaries: Binaries } | { error: Error }> {
  availability ??= findBinaries().then(
    (binaries) => ({ binaries }),
    (error) => ({ error }),
  );
  return availability;
}

let warned = false;

/** Whether to skip (binaries unavailable outside CI), saying why once; or the binaries. */
async function gate(): Promise<
  { skip: boolean; found: { binaries: Binaries } | { error: Error } }
> {
  const found = await binariesOnce();
  const skip = "error" in found && found.error instanceof BinariesUnavailable && !inCi();
  if (skip && !warned) {
    warned = true;
    console.error(
      `\n!!! SKIPPING integration tests (not under CI): ${found.error.message}\n`,
    );
  }
  return { skip, found };
}

/**
 * Registers a test that needs the control-plane binaries but starts its processes itself
 * (e.g. a child `deno task cluster`). Skips like `integrationTest`.
 */
export async function binariesTest(
  name: string,
  fn: (binaries: Binaries, t: Deno.TestContext) => Promise<void>,
): Promise<void> {
  const { skip, found } = await gate();
  Deno.test({
    name,
    ignore: skip,
    // Components and their pipes outlive single steps by design; the harness stops them all.
    sanitizeOps: false,
    sanitizeResources: false,
    async fn(t) {
      if ("error" in found) throw found.error;
      await beforeDeadline(name, fn(found.binaries, t), OUTER_DEADLINE_MS);
    },
  });
}

/**
 * Registers a test that gets a started control plane and a `step` helper. Resolving the binaries
 * may build them (minutes, once); that happens when the test module loads.
 */
export async function integrationTest(
  name: string,
  options: ControlPlaneOptions,
  fn: (plane: ControlPlane, step: Step, t: Deno.TestContext) => Promise<void>,
): Promise<void> {
  await binariesTest(name, async (binaries, t) => {
    const plane = await ControlPlane.start({ binaries, ...options });
    let failed = false;
    const step: Step = async (stepName, stepFn) => {
      const ok = await t.step(stepName, stepFn);
      if (!ok) failed = true;
      return ok;
    };
    try {
      await beforeDeadline(name, fn(plane, step, t));
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      if (failed) {
        for (const [component, file] of Object.entries(plane.logFiles())) {
          console.error(`  ${component}: ${file}`);
        }
      }
      await plane.stop({ keepLogs: failed });
    }
  });
}
