/**
 * Declares a Deno test that runs against a fresh control plane, keeps its logs when it fails,
 * and skips only outside CI when the binaries cannot be had (saying so loudly).
 */
import { type Binaries, BinariesUnavailable, findBinaries } from "./binaries.ts";
import { inCi } from "./ci.ts";
import { ControlPlane, type ControlPlaneOptions } from "./control_plane.ts";

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

/**
 * Registers a test that gets a started control plane and a `step` helper. Resolving the binaries
 * may build them (minutes, once); that happens when the test module loads.
 */
export async function integrationTest(
  name: string,
  options: ControlPlaneOptions,
  fn: (plane: ControlPlane, step: Step, t: Deno.TestContext) => Promise<void>,
): Promise<void> {
  const found = await binariesOnce();
  const skip = "error" in found && found.error instanceof BinariesUnavailable && !inCi();
  if (skip && !warned) {
    warned = true;
    console.error(
      `\n!!! SKIPPING integration tests (not under CI): ${found.error.message}\n`,
    );
  }
  Deno.test({
    name,
    ignore: skip,
    // Components and their pipes outlive single steps by design; the harness stops them all.
    sanitizeOps: false,
    sanitizeResources: false,
    async fn(t) {
      if ("error" in found) throw found.error;
      const plane = await ControlPlane.start({ binaries: found.binaries, ...options });
      let failed = false;
      const step: Step = async (stepName, stepFn) => {
        const ok = await t.step(stepName, stepFn);
        if (!ok) failed = true;
        return ok;
      };
      try {
        await fn(plane, step, t);
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
    },
  });
}
