/**
 * Clients of their own for what callers cause (access reviews, admission reads), apart from the
 * reconcilers' rate limit, so that a flood of callers slows only them; closed with the manager.
 */
import { KubeClient } from "../../kube/client.ts";
import type { ClusterConfig } from "../../kube/cluster_config.ts";

/** A rate limit: a steady rate and a burst. */
export interface CallerRateLimit {
  /** Sustained requests per second. */
  qps: number;
  /** Requests that may go at once after a quiet spell. */
  burst: number;
}

/** The callers' clients of one manager. */
export class CallerClients {
  readonly #clients: KubeClient[] = [];

  /** `operator` names the user agent (`<operator>/<purpose>`). */
  constructor(private readonly config: ClusterConfig, private readonly operator: string) {}

  /** A new client for `purpose`, without retries (a caller waits), with its own rate limit. */
  client(purpose: string, rateLimit?: CallerRateLimit): KubeClient {
    const client = new KubeClient(this.config, {
      userAgent: `${this.operator}/${purpose}`,
      rateLimit,
      maxRetries: 0,
    });
    this.#clients.push(client);
    return client;
  }

  /** Closes every client made. */
  close(): void {
    this.#clients.forEach((client) => client.close());
  }
}
