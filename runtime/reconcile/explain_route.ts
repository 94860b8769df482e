/**
 * `/debug/explain` on the metrics server: the recent visits of one object by every controller of
 * its kind (each controller's `VisitHistory`), as JSON, for the `explain` command. Only for callers
 * who may read `/metrics` (a bearer token through a TokenReview, then a SubjectAccessReview for
 * `get /metrics`: the metrics-reader ClusterRole grants both), whether the metrics are served over
 * HTTPS or on a workstation's loopback: a timeline names objects and says what the operator did.
 */
import { objectRef, refKey } from "../../kube/object_ref.ts";
import { type AccessReviewer, authorize, HttpError, type Route } from "../observe/mod.ts";
import type { Controller } from "./controller.ts";
import type { VisitRecord } from "./visit_history.ts";

/** The path the route answers on. */
export const EXPLAIN_PATH = "/debug/explain";

/** What `/debug/explain` answers. */
export interface Explanation {
  /** `Kind namespace/name`. */
  object: string;
  /** Every controller of the kind, with the visits its history still holds (oldest first). */
  controllers: { controller: string; kept: number; visits: VisitRecord[] }[];
}

/**
 * The route, over `controllers`; `GET /debug/explain?group=G&kind=K&namespace=N&name=X`. The same
 * permission as `/metrics` (asked of `reviewer`); `readerRole` names the ClusterRole to bind.
 */
export function explainRoute(
  controllers: Pick<Controller, "name" | "plugin" | "history">[],
  reviewer: AccessReviewer,
  options: { readerRole?: string } = {},
): Route {
  return {
    path: EXPLAIN_PATH,
    methods: ["GET"],
    async handle(request) {
      const refusal = await authorize(request, "/metrics", reviewer, options.readerRole);
      if (refusal) return refusal;
      const query = new URL(request.url).searchParams;
      const [group, kind, namespace, name] = ["group", "kind", "namespace", "name"].map((k) =>
        query.get(k) ?? ""
      );
      if (!kind || !name) throw new HttpError(400, "give kind and name (and group, namespace)");
      const ours = controllers.filter((c) =>
        c.plugin.for.kind === kind && (c.plugin.for.group ?? "") === group
      );
      if (!ours.length) {
        throw new HttpError(404, `no controller of this operator reconciles ${kind}`);
      }
      const resource = ours[0].plugin.for;
      const key = refKey(objectRef(resource, { metadata: { namespace, name } }));
      const explanation: Explanation = {
        object: `${kind} ${resource.namespaced ? `${namespace}/` : ""}${name}`,
        controllers: ours.map((c) => ({
          controller: c.name,
          kept: c.history.capacity,
          visits: c.history.of(key),
        })),
      };
      return Response.json(explanation);
    },
  };
}
