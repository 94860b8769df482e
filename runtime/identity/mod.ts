/**
 * Who the operator is: its identity (name, API domain, version) and the names derived from it,
 * which every other part uses where the runtime names itself; ours is the default.
 */
export * from "./operator_identity.ts";
export * from "./ptemplate_operator.ts";
