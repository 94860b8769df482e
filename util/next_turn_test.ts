import { expect } from "expect";
import { nextTurn, nextTurnIfDue } from "./next_turn.ts";

/** The round of `rounds` in which a timer set before them ran, if it ran at all. */
async function timerRound(rounds: number, pause: () => Promise<void> | undefined) {
  let round = 0;
  let ranAt: number | undefined;
  const timer = setTimeout(() => ranAt = round, 0);
  for (; round < rounds; round++) {
    const busy = performance.now() + 0.01;
    while (performance.now() < busy) { /* a step of work */ }
    await pause();
  }
  clearTimeout(timer);
  return ranAt;
}

Deno.test("a chain of promises never gives a timer its turn", async () => {
  expect(await timerRound(5_000, () => Promise.resolve())).toBeUndefined();
});

Deno.test("waiting for the next turn lets a timer in", async () => {
  expect(await timerRound(5_000, nextTurn)).toBeLessThan(5_000);
});

Deno.test("a turn when due lets a timer in within the budget, not at every step", async () => {
  let turns = 0;
  const ranAt = await timerRound(5_000, () => {
    const due = nextTurnIfDue(5);
    if (due) turns++;
    return due;
  });
  expect(ranAt).toBeLessThan(5_000);
  expect(turns).toBeLessThan(5_000 / 2);
});
