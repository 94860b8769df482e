/**
 * controller-runtime's webhook metrics, by route: `controller_runtime_webhook_requests_total
 * {webhook,code}`, `controller_runtime_webhook_latency_seconds{webhook}` and
 * `controller_runtime_webhook_requests_in_flight{webhook}`, where `webhook` is the route's path
 * (`/validate/<plugin>`, `/convert`), never a caller's, so the series stay as few as the routes.
 * A denied admission is an answer (200); what counts as failing is any other code.
 */
import type { Registry } from "../observe/mod.ts";

/** client_golang's default buckets, which controller-runtime's latency histogram uses. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * An HttpServer `observe` hook counting into `registry`; the `routes` given start at zero (in
 * flight), so that a webhook nobody has called yet is on the dashboards too.
 */
export function webhookObserver(
  registry: Registry,
  routes: readonly string[],
): (route: string) => (status: number) => void {
  const requests = registry.counter(
    "controller_runtime_webhook_requests_total",
    "Total number of admission requests by HTTP status code.",
    ["webhook", "code"],
  );
  const latency = registry.histogram(
    "controller_runtime_webhook_latency_seconds",
    "Histogram of the latency of processing admission requests",
    ["webhook"],
    LATENCY_BUCKETS,
  );
  const inFlight = registry.gauge(
    "controller_runtime_webhook_requests_in_flight",
    "Current number of admission requests being served.",
    ["webhook"],
  );
  for (const webhook of routes) inFlight.set({ webhook }, 0);
  return (webhook) => {
    const started = performance.now();
    inFlight.inc({ webhook });
    return (status) => {
      inFlight.dec({ webhook });
      latency.observe({ webhook }, (performance.now() - started) / 1000);
      requests.inc({ webhook, code: String(status) });
    };
  };
}
