/**
 * Which plugins run in a Worker of their own, in a process of its own (a plugin host): those
 * loaded with `--plugin` when `--plugin-isolation=worker`, and those that ask for it
 * (`isolation: "worker"`). The Worker loads the plugin from where the main isolate did (the same
 * file, or the same pinned bytes), so a plugin carried by the binary itself, which has no such
 * source, always runs in-process. The host is this executable: `<binary> plugin-host` when
 * compiled, `deno run …/plugin_host.ts` otherwise.
 */
import {
  type HostCommand,
  hostUnderDenoRun,
  type Logger,
  type Plugin,
  type PluginRunner,
  workerRunner,
} from "../../runtime/mod.ts";
import type { Registry } from "../../runtime/mod.ts";
import type { CatalogEntry } from "./plugin_catalog.ts";

/** The hidden command that makes this executable a plugin host (runOperator dispatches it). */
export const PLUGIN_HOST_COMMAND = "plugin-host";

/**
 * How to start a plugin host for plugin `name` (its last argument, for `ps`) whose modules are in
 * `folders`: a compiled binary runs itself (its own permissions, fixed at compile time); under
 * `deno run` the host module runs with no permission but reading those folders and the runtime's
 * files (a plugin that reads a file elsewhere fails in its Worker, naming it).
 */
export function pluginHostCommand(folders: string[], name: string): HostCommand {
  if (Deno.build.standalone) {
    return { command: Deno.execPath(), args: [PLUGIN_HOST_COMMAND, name] };
  }
  const { command, args } = hostUnderDenoRun(folders);
  return { command, args: [...args, name] };
}

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
    choice.log.info(
      "plugin {plugin} runs in a Worker in a process of its own (heap cap {heap} MiB)",
      {
        plugin: plugin.name,
        heap: plugin.heapLimitMb ?? choice.heapLimitMb,
      },
    );
    return workerRunner(plugin, {
      host: pluginHostCommand(source.folders, plugin.name),
      url: source.url,
      exportName: source.exportName,
      heapLimitMb: plugin.heapLimitMb ?? choice.heapLimitMb,
      callTimeoutMs: plugin.reconcileTimeoutMs ?? choice.timeoutMs,
      log: choice.log,
      metrics,
    });
  };
}
