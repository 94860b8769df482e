/**
 * Our own identity, the runtime's default: the names ptemplate-operator has always given itself,
 * kept exactly, so that upgrading writes nothing and a rollback finds its own names everywhere
 * (the Lease, labels and annotations under `operator.ptemplate.dev`, default finalizers under
 * `operator.pt.example.com` as 0.2 put them, field managers that are the plugins' names).
 */
import denoJson from "../../deno.json" with { type: "json" };
import { defineOperator, type OperatorIdentity } from "./operator_identity.ts";

/** ptemplate-operator: what `main.ts` runs, and what a Manager is when not told otherwise. */
export const PTEMPLATE_OPERATOR: OperatorIdentity = defineOperator({
  name: "ptemplate-operator",
  domain: "pt.example.com",
  version: denoJson.version,
  description: "a Kubernetes operator for Ptemplate resources",
  image: "ghcr.io/ptemplate/ptemplate-operator",
  established: {
    objectDomain: "operator.ptemplate.dev",
    // 0.2 finalizes only what holds its own name: with another, an object finalized by this
    // version could not be deleted after a rollback. Unreleased builds after 0.2 used the object
    // domain; objects holding that are ours too.
    finalizerDomain: "operator.pt.example.com",
    legacyFinalizerDomains: ["operator.ptemplate.dev"],
    bareFieldManagers: true,
  },
});
