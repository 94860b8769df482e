/**
 * Our own identity, the runtime's default: the names ptemplate-operator has always given itself,
 * kept exactly, so that upgrading writes nothing (the Lease, labels and annotations under
 * `operator.ptemplate.dev`, 0.2's finalizers under `operator.pt.example.com`, field managers that
 * are the plugins' names).
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
    legacyFinalizerDomains: ["operator.pt.example.com"],
    bareFieldManagers: true,
  },
});
