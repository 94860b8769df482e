/**
 * Gives the event loop a turn, after the I/O that is ready now. Work that only awaits promises
 * runs as one unbroken chain of microtasks: a backlog of visits that read the cache and write
 * nothing would hold the thread until it drained, and the watch events of people's edits, the
 * probes and the lease renewal would wait behind it. `setImmediate` runs after the turn's I/O and,
 * unlike a nested `setTimeout(0)`, is never clamped to 4 ms.
 */
import { setImmediate } from "node:timers";

/** When the thread last came back from a turn given (`performance.now()`). */
let turnBegan = performance.now();

/** Waits for the event loop's next turn. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) =>
    setImmediate(() => {
      turnBegan = performance.now();
      resolve();
    })
  );
}

/**
 * Waits for the next turn once the thread has run `budgetMs` since it last gave one, else goes on
 * at once: the I/O waits at most that long, and short work is not slowed by a turn per step.
 */
export function nextTurnIfDue(budgetMs = 5): Promise<void> | undefined {
  return performance.now() - turnBegan >= budgetMs ? nextTurn() : undefined;
}
