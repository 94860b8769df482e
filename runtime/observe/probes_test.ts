import { expect } from "expect";
import { Checks } from "./probes.ts";

function checks(failing?: string) {
  const probe = new Checks("readyz");
  probe.add("ping", () => undefined);
  probe.add("informers-synced", () => failing);
  return probe;
}

Deno.test("probes answer like kube-apiserver: ok, or each check and the trailer", () => {
  expect(checks().respond()).toEqual({ status: 200, body: "ok" });
  expect(checks().respond({ verbose: true })).toEqual({
    status: 200,
    body: "[+]ping ok\n[+]informers-synced ok\nreadyz check passed\n",
  });
  expect(checks("waiting for Pod").respond()).toEqual({
    status: 500,
    body: "[+]ping ok\n[-]informers-synced failed: waiting for Pod\nreadyz check failed\n",
  });
});

Deno.test("?exclude= leaves a check out, and says when there is none of that name", () => {
  expect(checks("waiting").respond({ exclude: ["informers-synced"] })).toEqual({
    status: 200,
    body: "ok",
  });
  expect(checks().respond({ exclude: ["informers-synced", "nope"], verbose: true }).body).toBe(
    '[+]ping ok\n[+]informers-synced excluded: ok\nwarn: some health checks cannot be excluded: no matches for "nope"\nreadyz check passed\n',
  );
});

Deno.test("/readyz/<check> answers for one check", () => {
  expect(checks("waiting").respondOne("ping")).toEqual({ status: 200, body: "ok" });
  expect(checks("waiting").respondOne("informers-synced")).toEqual({
    status: 500,
    body: "internal server error: waiting\n",
  });
  expect(checks().respondOne("nope").status).toBe(404);
});

Deno.test("a check may pass with a note, which every answer shows", () => {
  const probe = new Checks("readyz");
  probe.add("ping", () => undefined);
  probe.add("kinds-served", () => ({ note: "Module is not served" }));
  const body = "[+]ping ok\n[+]kinds-served ok: Module is not served\nreadyz check passed\n";
  expect(probe.respond()).toEqual({ status: 200, body });
  expect(probe.respond({ verbose: true })).toEqual({ status: 200, body });
  expect(probe.respondOne("kinds-served")).toEqual({
    status: 200,
    body: "ok: Module is not served\n",
  });
});
