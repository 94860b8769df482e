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
  expect(await timerRound(100, nextTurn)).toBeLessThan(100);
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

Deno.test("many workers that take turns when due let a socket's answer through while they run", async () => {
  await using server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () => new Response("ok"),
  );
  // The workers stop on the answer, or at this deadline: an answer that waits for them comes
  // only then, one the thread lets through comes within a few turns.
  const deadline = performance.now() + 30_000;
  let answered = false;
  let answeredWhileBusy = false;
  const workers = Array.from({ length: 50 }, async () => {
    while (!answered && performance.now() < deadline) {
      let sum = 0;
      for (let i = 0; i < 2_000; i++) sum += Math.sqrt(i);
      await Promise.resolve(sum);
      await nextTurnIfDue();
    }
  });
  await fetch(`http://127.0.0.1:${server.addr.port}/`).then((response) => response.text());
  answeredWhileBusy = performance.now() < deadline;
  answered = true;
  await Promise.all(workers);
  expect(answeredWhileBusy).toBe(true);
});

Deno.test("callers while a turn is pending share it", async () => {
  const turn = nextTurn();
  expect(nextTurn()).toBe(turn);
  await turn;
  expect(nextTurn()).not.toBe(turn);
  await nextTurn();
});

Deno.test("a turn ends after every timer due when it began: the loop has waited once", async () => {
  const order: string[] = [];
  const turn = nextTurn().then(() => order.push("turn"));
  // Due at once: the loop runs such timers without looking at its sockets. The turn's end must
  // come after them, from a timer that was not due when the loop looked.
  setTimeout(() => order.push("due"), 0);
  await turn;
  expect(order).toEqual(["due", "turn"]);
});
