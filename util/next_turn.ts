/**
 * Gives the event loop a turn, with the I/O that is ready now. Work that only awaits promises runs
 * as one unbroken chain of microtasks: a backlog of visits that read the cache and write nothing
 * would hold the thread until it drained, and the watch events of people's edits, the probes and
 * the lease renewal would wait behind it. The turn is a timer, not `setImmediate`: Deno carries a
 * socket's bytes through to a stream's reader while its loop waits, which a timer makes it do; an
 * immediate lets that go only a step at a time (bench/README.md, "10,000 Ptemplates").
 */

/** When the thread last came back from a turn given (`performance.now()`). */
let turnBegan = performance.now();
/** The turn asked for and not yet given: every caller until then waits for this one. */
let pending: Promise<void> | undefined;

/**
 * Waits for the event loop's next turn, the same one for every caller until it comes, and a
 * turn in which the loop waits for its sockets. A timer each would not do: many workers, each
 * resumed by its own timer while the others' are still due, keep the thread busy from one timer
 * to the next. Nor would one timer alone: when the workers still finishing their visits take
 * longer than its delay, it is due as soon as they are done, and Deno runs a due timer without
 * polling its sockets, so a watch's events and our writes would wait for the whole backlog
 * (bench/README.md, "10,000 Ptemplates"). So the first timer runs once every visit under way has
 * ended, and sets a second, a millisecond away: nothing is due then, the loop waits, and reads and
 * writes what its sockets have.
 */
export function nextTurn(): Promise<void> {
  return pending ??= new Promise((resolve) =>
    setTimeout(() =>
      setTimeout(() => {
        pending = undefined;
        turnBegan = performance.now();
        resolve();
      }, 1), 0)
  );
}

/**
 * Waits for the next turn once `budgetMs` have passed since one was last given here, else goes on
 * at once: the I/O waits about that long at most, and the turns (a timer's wait each) cost a small
 * share of the time. Time the loop spent idle counts as well, so ask only while work goes on (a
 * backlog), not after the last of it.
 */
export function nextTurnIfDue(budgetMs = 20): Promise<void> | undefined {
  return performance.now() - turnBegan >= budgetMs ? nextTurn() : undefined;
}
