/**
 * `explain <kind> <namespace>/<name>`: why the operator did what it did to one object, as a
 * timeline a person reads in seconds: each recent visit by each controller of the kind, when,
 * why (every change folded into it), how long it waited and took, what it wrote, the Events and
 * conditions it set, how it ended and what comes next. It asks a running operator, at its metrics
 * address (`--endpoint`), with a bearer token the API server takes for someone who may read
 * `/metrics`: the kubeconfig's own, a file's, or one made for `--service-account`.
 */
import type { KubeClient } from "../../kube/mod.ts";
import { EXPLAIN_PATH, type Explanation, type VisitRecord } from "../../runtime/mod.ts";
import { defineCommand } from "../command/command.ts";
import { connect } from "../command/connect.ts";
import { EXPLAIN } from "../command/flag_table.ts";
import { UsageError } from "../flags/flags.ts";
import type { CatalogEntry } from "../plugin_loading/plugin_catalog.ts";

export const explainCommand = defineCommand({
  summary: "why the operator did what it did to an object: its recent reconciles, with causes",
  flags: EXPLAIN,
  args: "<kind> <namespace>/<name>",
  async run(values, { catalog, operator, args }) {
    if (args.length !== 2) {
      throw new UsageError(
        `give a kind and an object: ${operator.name} explain <kind> <namespace>/<name>`,
      );
    }
    const entries = await catalog(values);
    const resource = kindNamed(args[0], entries);
    const [namespace, name] = args[1].includes("/") ? args[1].split("/", 2) : ["", args[1]];
    if (resource.namespaced && !namespace) {
      throw new UsageError(`${resource.kind} is namespaced: give <namespace>/<name>`);
    }
    const client = await connect(values, operator);
    let token: string;
    try {
      token = await tokenFor(values, client);
    } finally {
      client.close();
    }
    const url = new URL(EXPLAIN_PATH, values.endpoint);
    url.search = new URLSearchParams({
      group: resource.group ?? "",
      kind: resource.kind,
      namespace,
      name,
    }).toString();
    const caFile = values["ca-file"];
    const http = caFile
      ? Deno.createHttpClient({ caCerts: [await Deno.readTextFile(caFile)] })
      : undefined;
    let response: Response;
    try {
      response = await fetch(url, {
        headers: { authorization: `Bearer ${token}` },
        client: http,
        signal: AbortSignal.timeout(10_000),
      });
    } catch (error) {
      throw new Error(
        `cannot reach the operator at ${values.endpoint} (${(error as Error).message}); give ` +
          `--endpoint its metrics address (in a cluster: kubectl port-forward to the leader's pod)`,
      );
    } finally {
      http?.close();
    }
    const text = await response.text();
    if (!response.ok) throw new Error(`the operator answered ${response.status}: ${text.trim()}`);
    console.log(timeline(JSON.parse(text) as Explanation));
    return 0;
  },
});

/** The plugin kind `word` names: its kind, plural or short name, in any case. */
function kindNamed(word: string, entries: CatalogEntry[]) {
  const wanted = word.toLowerCase();
  for (const { plugin, crds } of entries) {
    const resource = plugin.for;
    const shortNames = crds.flatMap((crd) => {
      const names = (crd.spec as { names?: { kind?: string; shortNames?: string[] } }).names;
      return names?.kind === resource.kind ? names.shortNames ?? [] : [];
    });
    const names = [resource.kind, resource.plural, ...shortNames].map((n) => n.toLowerCase());
    if (names.includes(wanted)) return resource;
  }
  const known = [...new Set(entries.map((e) => e.plugin.for.kind.toLowerCase()))].join(", ");
  throw new UsageError(`no plugin of this operator reconciles "${word}"; it knows ${known}`);
}

/** A token the API server takes: from a file, a ServiceAccount, or the kubeconfig's own. */
async function tokenFor(
  values: { "token-file"?: string; "service-account"?: string },
  client: KubeClient,
): Promise<string> {
  const file = values["token-file"];
  if (file) return (await Deno.readTextFile(file)).trim();
  const account = values["service-account"];
  if (account) {
    const [namespace, name] = account.split("/", 2);
    if (!namespace || !name) {
      throw new UsageError(`--service-account takes <namespace>/<name>, not "${account}"`);
    }
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/` +
      `${encodeURIComponent(name)}/token`;
    const made = await client.request<{ status?: { token?: string } }>("POST", path, {
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { expirationSeconds: 600 },
      },
    });
    const token = made?.status?.token;
    if (!token) throw new Error(`no token came back for ServiceAccount ${account}`);
    return token;
  }
  const own = await client.transport.bearerToken();
  if (!own) {
    throw new UsageError(
      "your kubeconfig's user has no bearer token (a client certificate, say): give " +
        "--service-account <namespace>/<name> of an account bound to the metrics-reader " +
        "ClusterRole, or --token-file",
    );
  }
  return own;
}

/** The explanation as lines a person reads: one block per visit, in time order. */
export function timeline(explanation: Explanation): string {
  const visits = explanation.controllers.flatMap((c) => c.visits)
    .sort((a, b) => a.at.localeCompare(b.at));
  const kept = explanation.controllers.map((c) => c.kept);
  const head = `${explanation.object}: ${visits.length} recent visit(s)` +
    (kept.length ? ` (each controller keeps its last ${Math.min(...kept)})` : "");
  if (!visits.length) {
    return `${head}\nno visit of it is kept: it has not been reconciled lately, or the ` +
      `operator you asked is not the one that reconciles it (the leader, or its shard's holder)`;
  }
  const width = Math.max(...visits.map((v) => v.controller.length));
  return [head, "", ...visits.map((v) => block(v, width))].join("\n");
}

function block(visit: VisitRecord, width: number): string {
  const time = visit.at.slice(11, 23);
  const lines = [
    `${time}  ${visit.controller.padEnd(width)}  ${visit.outcome} in ${visit.tookMs} ms, ` +
    `after ${visit.waitedMs} ms in the ${visit.priority} lane` +
    (visit.traceId ? `  trace ${visit.traceId}` : ""),
  ];
  const more = visit.moreCauses ? [`and ${visit.moreCauses} more`] : [];
  const add = (label: string, items: string[]) => {
    for (const [i, item] of items.entries()) {
      lines.push(`    ${i ? " ".repeat(label.length) : label}  ${item}`);
    }
  };
  add("why  ", [...visit.causes, ...more].length ? [...visit.causes, ...more] : ["(none said)"]);
  add("wrote", visit.writes);
  add("event", visit.events);
  add("set  ", visit.conditions.length ? [visit.conditions.join(", ")] : []);
  if (visit.error) add("error", [visit.error]);
  if (visit.next) add("next ", [visit.next]);
  return lines.join("\n");
}
