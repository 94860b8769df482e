/**
 * Leader election on a Lease, and the write fence a leader keeps shut once it may have lost it.
 */
export * from "./leader_election.ts";
export * from "./leader_identity.ts";
export * from "./lease_view.ts";
export * from "./leader_metrics.ts";
export { type Clock, Instant } from "../../util/clock.ts";
