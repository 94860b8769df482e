/**
 * Which plugins run in a Worker of their own: those loaded with `--plugin` when
 * `--plugin-isolation=worker`, and those that ask for it (`isolation: "worker"`). The Worker loads
 * the plugin from where the main isolate did (the same file, or the same pinned bytes), so a
 * plugin carried by the binary itself, which has no such source, always runs in-process.
 */
import { type Logger, type Plugin, type PluginRunner, workerRunner } from "../runtime/mod.ts";
import type { Registry } from "../runtime/mod.ts";
import type { CatalogEntry } from "./plugin_catalog.ts";

/** What decides where plugins run. */
export interface IsolationChoice {
  /** `--plugin-isolation`. */
  mode: "none" | "worker";
  /** `--plugin-heap-limit`, MiB. */
  heapLimitMb: number;
  /** `--reconcile-timeout`, ms: also the deadline of a Worker's mappings, filters and admission. */
  timeoutMs: number;
  log: Logger;
}

/** The runner of each plugin that runs in a Worker (for the manager's `runnerFor`). */
export function isolatedRunners(
  entries: CatalogEntry[],
  choice: IsolationChoice,
): (plugin: Plugin, metrics: Registry) => PluginRunner | undefined {
  const sources = new Map(entries.map((e) => [e.plugin.name, e.source]));
  return (plugin, metrics) => {
    const source = sources.get(plugin.name);
    const wanted = plugin.isolation === "worker" || (choice.mode === "worker" && source);
    if (!wanted) return undefined;
    if (!source) {
      choice.log.warn(
        "plugin {plugin} asks for a Worker, but it is carried by the binary (no file to load " +
          "it from): it runs in-process",
        { plugin: plugin.name },
      );
      return undefined;
    }
    choice.log.info("plugin {plugin} runs in a Worker (heap cap {heap} MiB)", {
      plugin: plugin.name,
      heap: plugin.heapLimitMb ?? choice.heapLimitMb,
    });
    return workerRunner(plugin, {
      url: source.url,
      exportName: source.exportName,
      heapLimitMb: plugin.heapLimitMb ?? choice.heapLimitMb,
      callTimeoutMs: plugin.reconcileTimeoutMs ?? choice.timeoutMs,
      log: choice.log,
      metrics,
    });
  };
}
