/**
 * What only a process of its own shows of the warning throttle: its timer does not hold a finished
 * program open. Named `_process_test` because it runs `deno`: `deno task test:unit` runs no program.
 */
import { expect } from "expect";

Deno.test("a throttle's timer never holds a finished process open", async () => {
  const script = `
    import { WarningThrottle } from "${new URL("./warning_throttle.ts", import.meta.url)}";
    new WarningThrottle({ warn() {} }, 600_000).warn("c", "m");
  `;
  // Ten minutes of interval; the process must end long before it (it is killed after one).
  const { success } = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", script],
    stdout: "null",
    stderr: "inherit",
    signal: AbortSignal.timeout(60_000),
  }).output();
  expect(success).toBe(true);
});
