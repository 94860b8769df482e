/**
 * What bench:backlog sees of the operator's children, as a person would: the Modules' `max_dev`
 * and which DaemonSets exist in one namespace, kept current by a list and a watch in the bench's
 * own process, each change stamped with the bench's clock when it arrived.
 */
import { MODULE, type Module } from "../crds/kmm_module.ts";
import type { KubeClient } from "../kube/client.ts";
import { ApiError } from "../kube/errors.ts";
import { DAEMON_SET } from "../kube/kinds.ts";
import type { Resource } from "../kube/resource.ts";

/** The `max_dev` a Module's modprobe parameters give its kernel module; undefined if none. */
export function maxdevOf(module: Module): number | undefined {
  const parameters = module.spec?.moduleLoader?.container?.modprobe?.parameters ?? [];
  const found = parameters.find((p) => p.startsWith("max_dev="));
  return found === undefined ? undefined : Number(found.slice("max_dev=".length));
}

/** A wait for a child to be as wanted: resolves with the time (ms since epoch) it was seen so. */
interface Waiter {
  matches: () => boolean;
  resolve: (at: number) => void;
}

/** The Modules and DaemonSets of one namespace, watched until `stop()`. */
export class ChildWatch {
  /** Each Module's `max_dev` now. */
  readonly maxdev = new Map<string, number | undefined>();
  /** The DaemonSets that exist now. */
  readonly daemonSets = new Set<string>();
  #waiters: Waiter[] = [];
  readonly #abort = new AbortController();
  readonly #loops: Promise<void>[];
  /** Why a watch stopped before `stop()`, if one did: its waits then never resolve. */
  failure?: unknown;
  /** Resolves once both kinds have been listed. */
  readonly ready: Promise<void>;

  constructor(client: KubeClient, namespace: string) {
    const listed = [Promise.withResolvers<void>(), Promise.withResolvers<void>()];
    this.ready = Promise.all(listed.map((l) => l.promise)).then(() => undefined);
    this.#loops = [
      this.#follow(client, MODULE, namespace, listed[0].resolve, (type, module) => {
        if (type === "DELETED") this.maxdev.delete(module.metadata!.name!);
        else this.maxdev.set(module.metadata!.name!, maxdevOf(module as Module));
      }),
      this.#follow(client, DAEMON_SET, namespace, listed[1].resolve, (type, ds) => {
        if (type === "DELETED") this.daemonSets.delete(ds.metadata!.name!);
        else this.daemonSets.add(ds.metadata!.name!);
      }),
    ].map((loop) => loop.catch((error) => void (this.failure = error)));
  }

  /** When Module `name` first had `max_dev` `value`, from now on (now, if it has it already). */
  moduleHas(name: string, value: number): Promise<number> {
    return this.#when(() => this.maxdev.get(name) === value);
  }

  /** When Module `name` and DaemonSet `daemonSet` both first existed, from now on. */
  bothExist(name: string, daemonSet: string): Promise<number> {
    return this.#when(() => this.maxdev.has(name) && this.daemonSets.has(daemonSet));
  }

  /** Stops watching; waits that have not resolved never will. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.all(this.#loops);
  }

  #when(matches: () => boolean): Promise<number> {
    if (matches()) return Promise.resolve(Date.now());
    const { promise, resolve } = Promise.withResolvers<number>();
    this.#waiters.push({ matches, resolve });
    return promise;
  }

  #changed(): void {
    if (!this.#waiters.length) return;
    const now = Date.now();
    this.#waiters = this.#waiters.filter((w) => {
      if (!w.matches()) return true;
      w.resolve(now);
      return false;
    });
  }

  /** List, then watch from the list's version; a watch that ends resumes, a 410 lists again. */
  async #follow(
    client: KubeClient,
    resource: Resource,
    namespace: string,
    listed: () => void,
    apply: (type: string, object: { metadata?: { name?: string } }) => void,
  ): Promise<void> {
    const signal = this.#abort.signal;
    let version: string | undefined;
    while (!signal.aborted) {
      try {
        if (version === undefined) {
          const list = await client.listAll(resource, { namespace });
          for (const object of list.items) apply("ADDED", object);
          version = list.resourceVersion;
          listed();
          this.#changed();
        }
        for await (
          const event of client.watch(resource, { namespace, resourceVersion: version, signal })
        ) {
          version = event.object.metadata?.resourceVersion ?? version;
          if (event.type === "BOOKMARK") continue;
          apply(event.type, event.object);
          this.#changed();
        }
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof ApiError && error.code === 410) version = undefined;
        else throw error;
      }
    }
  }
}
