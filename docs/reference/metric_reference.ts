/**
 * docs/reference/metrics.md from the code that registers the metrics: a Manager built (not run)
 * as `run` builds it, with leader election, with `--shards` and with `--dry-run`; a webhook
 * server; and each plugin the binary runs by default, reconciled once with the sample object of
 * its kind from examples/seed.yaml. Each registers on a registry that notes what it is given, so
 * the page lists what the code registers, not a copy of it.
 */
import { parseAllDocuments } from "yaml";
import { builtInCatalog } from "../../cli/plugin_catalog.ts";
import { KubeClient, type KubeObject } from "../../kube/mod.ts";
import {
  DryRunReport,
  Family,
  HttpServer,
  log,
  Manager,
  type ManagerOptions,
  type Metric,
  type Plugin,
  Registry,
  WebhookServer,
} from "../../runtime/mod.ts";
import { reconcileOnce } from "../../testing/reconcile_once.ts";
import { code, generatedHeader, prose, table } from "./markdown.ts";

/** One metric, as registered. */
export interface MetricEntry {
  name: string;
  type: string;
  labels: readonly string[];
  help: string;
  /** When a process has it: every process, or only with a flag or a plugin. */
  when: string;
}

/** A registry that keeps the metrics it is given, in order. */
class NotingRegistry extends Registry {
  readonly noted: Metric[] = [];
  override register<M extends Metric>(metric: M): M {
    const kept = super.register(metric);
    if (!this.noted.includes(kept)) this.noted.push(kept);
    return kept;
  }
}

/** The metrics on `registry` (a plain one): read from its text, then looked up by name. */
function familiesOf(registry: Registry): Family<unknown>[] {
  const types = [...registry.render().matchAll(/^# TYPE (\S+) (\S+)$/gm)];
  return types.map(([, name, type]) =>
    // Asking for a name already registered returns the metric that holds it.
    type === "histogram"
      ? registry.histogram(name, "", [], [])
      : type === "counter"
      ? registry.counter(name, "")
      : registry.gauge(name, "")
  );
}

function entry(metric: Metric, when: string): MetricEntry {
  if (!(metric instanceof Family)) throw new TypeError(`${metric.name}: not a metric family`);
  return {
    name: metric.name,
    type: metric.type,
    labels: metric.labelNames,
    help: metric.help,
    when,
  };
}

/** A client of an API server that is not there: building a Manager sends nothing. */
function nowhere(): KubeClient {
  return new KubeClient({ server: "https://127.0.0.1:9", namespace: "default", source: "docs" }, {
    maxRetries: 0,
  });
}

/** The objects of examples/seed.yaml, the samples a plugin is reconciled with. */
async function samples(): Promise<KubeObject[]> {
  const text = await Deno.readTextFile(new URL("../../examples/seed.yaml", import.meta.url));
  return parseAllDocuments(text).map((d) => d.toJS() as KubeObject);
}

/** What a process registers, each with when it has it. */
export async function registeredMetrics(): Promise<MetricEntry[]> {
  const catalog = builtInCatalog();
  const plugins = catalog.filter((e) => e.enabledByDefault).map((e) => e.plugin as Plugin);
  const found: MetricEntry[] = [];
  const noteAll = (when: string, build: (registry: NotingRegistry) => void) => {
    const registry = new NotingRegistry();
    build(registry);
    for (const metric of registry.noted) {
      if (!found.some((f) => f.name === metric.name)) found.push(entry(metric, when));
    }
  };
  const client = nowhere();
  try {
    const manager = (registry: Registry, more: Partial<ManagerOptions> = {}) =>
      new Manager({ client, plugins, registry, ...more });
    const election = { namespace: "default", identity: "docs" };
    noteAll("every process", (registry) => manager(registry));
    noteAll("with leader election", (registry) => manager(registry, { leaderElection: election }));
    noteAll(
      "with `--shards`",
      (registry) => manager(registry, { leaderElection: election, shards: 2 }),
    );
    noteAll("with `--dry-run`", (registry) => manager(registry, { dryRun: new DryRunReport() }));
    noteAll("with an HTTPS server (webhooks, `--metrics-secure`)", (registry) =>
      new HttpServer({
        name: "metrics",
        bind: { hostname: "127.0.0.1", port: 0 },
        routes: [],
        tls: { certificate: () => Promise.resolve(undefined) },
        registry,
        log: log("docs"),
      }));
    noteAll("with webhooks served", (registry) =>
      new WebhookServer({
        bind: { hostname: "127.0.0.1", port: 0 },
        plugins,
        certificate: () => Promise.resolve(undefined),
        context: {
          client,
          cache: () => {
            throw new Error("a webhook server built for its metrics reads nothing");
          },
          installed: () => true,
          log: log("docs"),
        },
        registry,
        log: log("docs"),
      }));
  } finally {
    client.close();
  }
  const objects = await samples();
  for (const plugin of plugins) {
    const sample = objects.find((o) => o.kind === plugin.for.kind);
    if (!sample) continue;
    // A status already there: the object is past its first visit, as most are.
    const { metrics } = await reconcileOnce(plugin, { ...sample, status: {} } as KubeObject);
    for (const family of familiesOf(metrics)) {
      if (!found.some((f) => f.name === family.name)) {
        found.push(entry(family, `plugin ${code(plugin.name)}`));
      }
    }
  }
  return found;
}

/** The page. */
export async function metricsPage(): Promise<string> {
  const metrics = await registeredMetrics();
  const whens = [...new Set(metrics.map((m) => m.when))];
  const rows = whens.flatMap((when) =>
    metrics.filter((m) => m.when === when).sort((a, b) => a.name.localeCompare(b.name)).map((m) => [
      code(m.name),
      m.type,
      m.labels.map(code).join(", "),
      when,
      prose(m.help),
    ])
  );
  return `${
    generatedHeader(
      "Metrics",
      "the code that registers them (a Manager, a webhook server and the default plugins, built " +
        "on a registry that notes each metric)",
    )
  }
What \`/metrics\` serves (Prometheus text, \`--metrics-bind-address\`), and when. Names follow
controller-runtime and client-go where they have one, so existing dashboards and alerts work. A
queue's depth, adds and waits carry \`priority\` (\`edit\` or \`bulk\`): sum over it for the queue as
a whole. [The operating guide](../guides/operating.md) says which to watch, and
[metrics_and_alerts.md](../operating/metrics_and_alerts.md) the alerts built on them.

${table(["metric", "type", "labels", "when", "help"], rows)}`;
}
