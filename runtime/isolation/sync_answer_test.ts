import { expect } from "expect";
import { answerBuffer, awaitAnswer, expectAnswer, writeAnswer } from "./sync_answer.ts";

Deno.test("an answer crosses whole, small or larger than the buffer, which grows", () => {
  const shared = answerBuffer();
  expectAnswer(shared);
  writeAnswer(shared, 1, { value: { metadata: { name: "a" } } });
  expect(awaitAnswer(shared, 1)).toEqual({ value: { metadata: { name: "a" } } });
  const big = Array.from(
    { length: 5_000 },
    (_, i) => ({ name: `object-${i}`, data: "x".repeat(50) }),
  );
  const before = shared.byteLength;
  expectAnswer(shared);
  writeAnswer(shared, 2, { value: big });
  expect(shared.byteLength).toBeGreaterThan(before);
  expect(awaitAnswer(shared, 2)).toEqual({ value: big });
});

Deno.test("an answer is taken only by the call it answers", async () => {
  const shared = answerBuffer();
  expectAnswer(shared);
  writeAnswer(shared, 7, { value: true });
  // A later call does not take call 7's answer: it waits for its own.
  const worker = new Worker(
    `data:application/javascript,${
      encodeURIComponent(`
      self.onmessage = ({ data: shared }) => {
        const words = new Int32Array(shared, 0, 3);
        while (Atomics.load(words, 2) !== 8) Atomics.wait(words, 0, 0, 20);
        self.postMessage("woke for 8");
      };`)
    }`,
    { type: "module" },
  );
  const woke = new Promise((resolve) => worker.onmessage = (e) => resolve(e.data));
  worker.postMessage(shared);
  await new Promise((resolve) => setTimeout(resolve, 100));
  writeAnswer(shared, 8, { value: [] });
  expect(await woke).toBe("woke for 8");
  expect(awaitAnswer(shared, 8)).toEqual({ value: [] });
  worker.terminate();
});
