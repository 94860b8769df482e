/** Picks free TCP ports on loopback for the control-plane components. */

/**
 * `count` distinct ports the kernel says are free right now. They are released before the
 * components bind them, so another process could take one in between; components that fail to
 * bind make the harness start fail loudly rather than hang.
 */
export function freePorts(count: number): number[] {
  const listeners = Array.from(
    { length: count },
    () => Deno.listen({ hostname: "127.0.0.1", port: 0 }),
  );
  const ports = listeners.map((l) => (l.addr as Deno.NetAddr).port);
  for (const listener of listeners) listener.close();
  return ports;
}
