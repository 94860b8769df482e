import { expect } from "expect";
import { beforeDeadline } from "./integration_test_case.ts";

Deno.test("beforeDeadline fails a test whose work never settles, naming it", async () => {
  const never = new Promise<void>(() => {});
  await expect(beforeDeadline("stuck", never, 20)).rejects.toThrow(/"stuck" still runs after/);
});

Deno.test("beforeDeadline passes on what settles in time: a value, or the test's own failure", async () => {
  expect(await beforeDeadline("quick", Promise.resolve(7), 1_000)).toBe(7);
  await expect(beforeDeadline("failing", Promise.reject(new Error("its own")), 1_000))
    .rejects.toThrow("its own");
});
