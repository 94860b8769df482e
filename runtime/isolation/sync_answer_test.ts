import { expect } from "expect";
import { answerBuffer, readAnswer, writeAnswer } from "./sync_answer.ts";

Deno.test("an answer crosses whole, small or larger than the buffer, which grows", () => {
  const shared = answerBuffer();
  writeAnswer(shared, { value: { metadata: { name: "a" } } });
  expect(readAnswer(shared)).toEqual({ value: { metadata: { name: "a" } } });
  const big = Array.from(
    { length: 5_000 },
    (_, i) => ({ name: `object-${i}`, data: "x".repeat(50) }),
  );
  const before = shared.byteLength;
  writeAnswer(shared, { value: big });
  expect(shared.byteLength).toBeGreaterThan(before);
  expect(readAnswer(shared)).toEqual({ value: big });
  writeAnswer(shared, {});
  expect(readAnswer(shared)).toEqual({});
});
