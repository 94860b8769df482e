/** Following a Lease as it changes, and giving it up: what an elector does beside renewing. */
import type { KubeClient } from "../../kube/client.ts";
import { isApiError } from "../../kube/errors.ts";
import { LEASE } from "../../kube/kinds.ts";
import { ReconnectBackoff } from "../../util/backoff.ts";
import { type Clock, Instant } from "../../util/clock.ts";
import { sleep } from "../../util/sleep.ts";
import { instantSpan } from "../../util/tracer.ts";
import type { Logger } from "../observe/mod.ts";
import type { LeaseView } from "./lease_view.ts";

/**
 * Follows the Lease through a watch, so a release or another holder is noticed at once and a
 * record change is timed when it happens rather than at the next poll. Polling goes on
 * regardless: this only makes things faster, never safer.
 */
export async function watchLease(
  client: KubeClient,
  lease: { namespace: string; name: string },
  to: { view: LeaseView; clock: Clock; seen: () => void; signal: AbortSignal },
): Promise<void> {
  const { namespace, name } = lease;
  const { view, clock, signal } = to;
  const backoff = new ReconnectBackoff();
  while (!signal.aborted) {
    const from = view.resourceVersion;
    if (!from) {
      await sleep(200, signal);
      continue;
    }
    const started = clock.monotonicMs();
    try {
      for await (
        const event of client.watch(LEASE, {
          namespace,
          fieldSelector: `metadata.name=${name}`,
          resourceVersion: from,
          signal,
        })
      ) {
        if (event.type === "BOOKMARK") continue;
        view.observe(event.type === "DELETED" ? undefined : event.object, Instant.now(clock));
        to.seen();
      }
      backoff.reset();
    } catch (error) {
      if (signal.aborted) break;
      // 410: our resourceVersion is too old; the next look at the lease brings a new one.
      if (isApiError(error, 410)) view.forgetResourceVersion();
      await sleep(backoff.next(clock.monotonicMs() - started), signal);
    }
  }
}

/** Gives the Lease up so another instance can take it without waiting for it to expire. */
export async function releaseLease(
  client: KubeClient,
  lease: { namespace: string; name: string; identity: string; log: Logger },
  clock: Clock,
): Promise<void> {
  const { namespace, name, identity, log } = lease;
  try {
    const current = await client.get(LEASE, name, { namespace, timeoutMs: 5_000 });
    if (current.spec?.holderIdentity !== identity) return;
    const now = microTime(clock.wallMs());
    await client.update(LEASE, {
      ...current,
      spec: {
        leaseTransitions: current.spec.leaseTransitions,
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
      },
    }, { timeoutMs: 5_000 });
    log.info("released lease {lease}", { lease: name });
    instantSpan("leader election: released the lease", { lease: name, identity });
  } catch (error) {
    log.warn("could not release lease {lease}: {error}", {
      lease: name,
      error: (error as Error).message,
    });
  }
}

/** RFC 3339 with microseconds, as `MicroTime` fields require. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}
