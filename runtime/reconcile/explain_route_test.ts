import { expect } from "expect";
import { CONFIG_MAP } from "../../kube/kinds.ts";
import { EXPLAIN_PATH, explainRoute } from "./explain_route.ts";
import type { AccessReviewer } from "../observe/mod.ts";
import { VisitHistory, type VisitRecord } from "./visit_history.ts";

/** A reviewer that takes one token, for one user, who may get what `may` says. */
function reviewer(may: boolean): AccessReviewer {
  return {
    authenticate: (token: string) =>
      Promise.resolve(token === "good" ? { username: "reader", groups: [] } : undefined),
    authorize: () => Promise.resolve(may),
  } as unknown as AccessReviewer;
}

const visit = (key: string): VisitRecord => ({
  at: "2026-12-01T00:00:00.000Z",
  controller: "counter",
  key,
  causes: ["created ConfigMap ns/a (created)"],
  moreCauses: 0,
  priority: "edit",
  waitedMs: 1,
  tookMs: 2,
  outcome: "reconciled",
  writes: ["PATCH /api/v1/namespaces/ns/configmaps/a → 200"],
  events: [],
  conditions: [],
});

function controllers() {
  const history = new VisitHistory(10);
  history.add(visit("ConfigMap/ns/a"));
  history.add(visit("ConfigMap/ns/b"));
  return [{ name: "counter", plugin: { for: CONFIG_MAP }, history }] as never;
}

const ask = (route: ReturnType<typeof explainRoute>, query: string, token?: string) =>
  route.handle(
    new Request(`http://x${EXPLAIN_PATH}?${query}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    }),
    { path: EXPLAIN_PATH } as never,
  );

Deno.test("explain: one object's visits, for a caller who may read /metrics", async () => {
  const route = explainRoute(controllers(), reviewer(true));
  const answer = await ask(route, "group=&kind=ConfigMap&namespace=ns&name=a", "good");
  expect(answer.status).toBe(200);
  const body = await answer.json();
  expect(body.object).toBe("ConfigMap ns/a");
  expect(body.controllers[0].visits.map((v: VisitRecord) => v.key)).toEqual(["ConfigMap/ns/a"]);
});

Deno.test("explain: refused without a token, with one not taken, and without the grant", async () => {
  const query = "group=&kind=ConfigMap&namespace=ns&name=a";
  expect((await ask(explainRoute(controllers(), reviewer(true)), query)).status).toBe(401);
  expect((await ask(explainRoute(controllers(), reviewer(true)), query, "bad")).status).toBe(401);
  const forbidden = await ask(
    explainRoute(controllers(), reviewer(false), { readerRole: "reader-role" }),
    query,
    "good",
  );
  expect(forbidden.status).toBe(403);
  expect(await forbidden.text()).toContain("reader-role");
});
