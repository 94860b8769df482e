/**
 * What `run`'s flags cannot do together: a combination that contradicts itself, or a flag given
 * that the others leave without effect (a Lease name without leader election), is a UsageError
 * that names both and the fix, before anything starts. Each flag's own value is checked by its
 * rule in the flag table (cli/command/flag_table.ts) as it is parsed.
 */
import { type BindAddress, parseBindAddress } from "../../runtime/mod.ts";
import { METRICS_ADDRESS, type RUN } from "../command/flag_table.ts";
import { type FlagValuesOf, UsageError } from "../flags/flags.ts";

type RunValues = FlagValuesOf<typeof RUN>;

/** The longest suffix a ring gives its Leases: `-member-` and 16 hex digits of an identity's hash. */
const RING_SUFFIX = "-member-0123456789abcdef".length;

/** Where the operator runs, which decides defaults some combinations depend on. */
export interface RunPlace {
  inCluster: boolean;
}

/** Throws a UsageError for the first combination of `values` (those in `given` given) that cannot work. */
export function checkRunFlags(
  values: RunValues,
  given: ReadonlySet<string>,
  place: RunPlace,
): void {
  const problem = runFlagsProblem(values, given, place);
  if (problem) throw new UsageError(problem);
}

/** Why `values` cannot work together, or undefined. */
export function runFlagsProblem(
  values: RunValues,
  given: ReadonlySet<string>,
  { inCluster }: RunPlace,
): string | undefined {
  const shards = values.shards;
  if (values["dry-run"]) {
    for (
      const flag of ["leader-elect", "shards", "leader-election-id", "leader-election-namespace"]
    ) {
      if (given.has(flag)) {
        return `--dry-run takes no Lease, so it runs beside the real operator: leave --${flag} out`;
      }
    }
    for (const flag of ["webhook-cert-dir", "webhook-cert-mode", "webhook-service"]) {
      if (given.has(flag)) return `--dry-run serves no webhooks: leave --${flag} out`;
    }
  } else if (given.has("dry-run-output")) {
    return "--dry-run-output is how a dry run says what it would change: add --dry-run, or " +
      "leave --dry-run-output out";
  }
  const leaderElect = !values["dry-run"] &&
    (values["leader-elect"] ?? (inCluster || shards !== undefined));
  if (shards !== undefined && values["leader-elect"] === false) {
    return "--shards takes the work in shards held on Leases: it cannot go with " +
      "--leader-elect=false";
  }
  const id = values["leader-election-id"];
  if (shards !== undefined && id.length + RING_SUFFIX > 253) {
    return `--leader-election-id "${id}" has ${id.length} characters: with --shards its ` +
      `ring's Leases are named <id>-member-<16 hex digits>, at most 253, so it may have at most ` +
      `${253 - RING_SUFFIX}; shorten it`;
  }
  if (!leaderElect) {
    for (const flag of ["leader-election-namespace", "leader-election-id"]) {
      if (given.has(flag)) {
        return `--${flag} names the Lease of leader election, which is off${
          values["leader-elect"] === false ? " (--leader-elect=false)" : " on a workstation"
        }: add --leader-elect, or leave --${flag} out`;
      }
    }
  }

  const secure = values["metrics-secure"] ?? inCluster;
  const metrics = bind(
    "metrics-bind-address",
    values["metrics-bind-address"] ?? (secure ? METRICS_ADDRESS.secure : METRICS_ADDRESS.plain),
  );
  if (given.has("metrics-cert-dir")) {
    if (!secure) {
      return "--metrics-cert-dir is for HTTPS; it cannot go with --metrics-secure=false";
    }
    if (!metrics) {
      return "--metrics-cert-dir is for /metrics, which --metrics-bind-address=0 turns off: " +
        "leave one of them out";
    }
  }

  const webhooks = bind("webhook-bind-address", values["webhook-bind-address"]);
  const selfManaged = values["webhook-cert-mode"] === "self-managed";
  for (const flag of ["webhook-cert-dir", "webhook-cert-mode", "webhook-service"]) {
    if (!webhooks && given.has(flag)) {
      return `--${flag} is for the webhooks, which --webhook-bind-address=0 turns off: leave ` +
        "one of them out";
    }
  }
  if (selfManaged && given.has("webhook-cert-dir")) {
    return "--webhook-cert-dir is where certificates are read from, but " +
      "--webhook-cert-mode=self-managed makes them itself: leave one of them out";
  }
  if (!selfManaged && given.has("webhook-service")) {
    return "--webhook-service names the Service for self-managed certificates: add " +
      "--webhook-cert-mode=self-managed, or leave --webhook-service out";
  }

  const health = bind("health-probe-bind-address", values["health-probe-bind-address"]);
  const servers = [
    { flag: "--metrics-bind-address", address: metrics, https: secure },
    { flag: "--health-probe-bind-address", address: health, https: false },
    { flag: "--webhook-bind-address", address: webhooks, https: true },
  ];
  for (const [i, a] of servers.entries()) {
    for (const b of servers.slice(i + 1)) {
      if (!a.address || !b.address || !samePort(a.address, b.address)) continue;
      // Plain metrics and probes share one server on one port, as controller-runtime allows.
      if (!a.https && !b.https && a.flag !== "--webhook-bind-address") continue;
      return `${a.flag} and ${b.flag} are the same port (${b.address.port}), but ${
        a.https === b.https ? "are two servers" : "one is HTTPS and the other plain HTTP"
      }: give them different ports`;
    }
  }
  return undefined;
}

function bind(flag: string, value: string | undefined): BindAddress | undefined {
  return parseBindAddress(value ?? "", `--${flag}`);
}

/** Two listeners that would take the same port (0 is a free one each time). */
function samePort(a: BindAddress, b: BindAddress): boolean {
  if (a.port === 0 || a.port !== b.port) return false;
  const anywhere = (h: string) => h === "0.0.0.0" || h === "::";
  return a.hostname === b.hostname || anywhere(a.hostname) || anywhere(b.hostname);
}
