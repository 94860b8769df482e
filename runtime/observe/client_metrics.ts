/** client-go's metric names for the requests a client makes (`rest_client_*`), on a registry. */
import type { RequestCounter } from "../../kube/request_counter.ts";
import type { Transport } from "../../kube/transport.ts";
import type { Registry } from "./metrics.ts";

/**
 * Exposes a transport's connections (ours; client-go has none): `rest_client_connections`, open
 * now (one, and one more per 64 watches past the first 64), and
 * `rest_client_connections_replaced_total`, those found dead (nothing arrived on one, not even an
 * answer to `/livez`) and replaced, failing the watches on them.
 */
export function exposeConnections(registry: Registry, transport: Transport): void {
  const open = registry.gauge(
    "rest_client_connections",
    "HTTP connections to the API server open now",
    [],
  );
  const replaced = registry.counter(
    "rest_client_connections_replaced_total",
    "Connections to the API server on which nothing arrived, not even an answer to /livez, " +
      "replaced with everything on them",
    [],
  );
  registry.onCollect(() => {
    open.set({}, transport.connections);
    replaced.inc({}, transport.replaced - replaced.get({}));
  });
}

/** Exposes a client's request counts as `rest_client_requests_total{code,method,host}`. */
export function exposeRequestCounts(registry: Registry, requests: RequestCounter): void {
  const total = registry.counter(
    "rest_client_requests_total",
    "Number of HTTP requests, partitioned by status code, method, and host",
    ["code", "method", "host"],
  );
  const waits = registry.histogram(
    "rest_client_rate_limiter_duration_seconds",
    "Client side rate limiter latency in seconds. Broken down by verb, and host.",
    ["verb", "host"],
    [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
  );
  requests.onRateLimiterWait(({ verb, host, seconds }) => waits.observe({ verb, host }, seconds));
  registry.onCollect(() => {
    for (const sample of requests.samples()) {
      const labels = {
        code: String(sample.code || "<error>"),
        method: sample.method,
        host: sample.host,
      };
      total.inc(labels, sample.count - total.get(labels));
    }
  });
}
