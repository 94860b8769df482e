/**
 * The error that stops the operator from starting because of its environment (an unreachable API
 * server, a busy port, a missing namespace): its message is the fix, printed as one line. Neutral
 * ground, so the client, the caches, leader election and the servers can all raise it.
 */

/** Something about the environment stops the operator from starting; its message is the fix. */
export class StartupError extends Error {
  override readonly name = "StartupError";
}
