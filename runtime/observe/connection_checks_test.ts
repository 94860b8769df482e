import { expect } from "expect";
import { NetworkError } from "../../kube/network_error.ts";
import { connectionChecks } from "./connection_checks.ts";
import { Probes } from "./probes.ts";

Deno.test("no answer from the API server: not ready at once, unhealthy after a while", () => {
  let down: { forMs: number; error: NetworkError } | undefined;
  const probes = new Probes();
  probes.register(connectionChecks({ unreachable: () => down }, 60_000));
  expect(probes.readyz.respond().status).toBe(200);
  down = { forMs: 5_000, error: new NetworkError("timeout", "timeout") };
  expect(probes.readyz.respond().body).toContain(
    "[-]api-server failed: no answer for 5 s: timeout",
  );
  expect(probes.healthz.respond().status).toBe(200);
  down = { forMs: 61_000, error: new NetworkError("timeout", "timeout") };
  expect(probes.healthz.respond()).toEqual({
    status: 500,
    body: "[-]api-server failed: no answer for 61 s: timeout\nhealthz check failed\n",
  });
});
