/**
 * Our client's `listAll` and `watch`, scripted by a unit test of what reads them (the informer):
 * a list answers with the objects the test put there (or the error it queued), and a watch is a
 * stream the test feeds events, an error or an end. It answers only what the test says; what the
 * API server answers is for the integration tests to prove.
 */
import type { KubeClient } from "../../../kube/client.ts";
import type { KubeObject } from "../../../kube/object.ts";
import type { ListOptions, WatchOptions } from "../../../kube/request_options.ts";
import type { WatchEvent } from "../../../kube/watch.ts";

/** What the test has a watch do next. */
type Step = { event: WatchEvent<KubeObject> } | { error: Error } | { end: true };

/** One open watch: what it was asked, and a way to feed it. */
export class OpenWatch {
  readonly #steps: Step[] = [];
  #wake?: () => void;
  #closed = false;

  constructor(readonly options: WatchOptions) {}

  /** Delivers one event. */
  send(type: WatchEvent<KubeObject>["type"], object: KubeObject): void {
    this.#push({ event: { type, object } });
  }

  /** Ends the stream with `error` (thrown from the watch, as our client throws an ERROR event). */
  fail(error: Error): void {
    this.#push({ error });
  }

  /** Ends the stream cleanly, as a server's timeout does. */
  end(): void {
    this.#push({ end: true });
  }

  /** True once the stream has ended (by the test, or by its signal). */
  get closed(): boolean {
    return this.#closed;
  }

  #push(step: Step): void {
    this.#steps.push(step);
    this.#wake?.();
  }

  async *stream(): AsyncGenerator<WatchEvent<KubeObject>> {
    const signal = this.options.signal;
    const aborted = () => this.#wake?.();
    signal?.addEventListener("abort", aborted);
    try {
      while (!signal?.aborted) {
        const step = this.#steps.shift();
        if (!step) {
          await new Promise<void>((resolve) => this.#wake = resolve);
          continue;
        }
        if ("end" in step) return;
        if ("error" in step) throw step.error;
        yield step.event;
      }
    } finally {
      this.#closed = true;
      signal?.removeEventListener("abort", aborted);
    }
  }
}

/** A scripted list and watch; `client` is what an informer is given. */
export class FakeListWatch {
  /** What each list was asked, in order. */
  readonly lists: ListOptions[] = [];
  /** Every watch opened, in order. */
  readonly watches: OpenWatch[] = [];
  /** What the next lists answer, unless an error is queued. */
  items: KubeObject[] = [];
  /** The resourceVersion the next lists answer with. */
  resourceVersion = "1";
  /** While set, every list fails with it (after any error queued by `failList`). */
  listError?: Error;
  readonly #listErrors: Error[] = [];
  readonly #holds: Promise<void>[] = [];
  readonly #waiters: (() => void)[] = [];

  /** The client the informer reads through (only `listAll` and `watch` are there). */
  readonly client = {
    listAll: async (_resource: unknown, options: ListOptions) => {
      this.lists.push(options);
      this.#tell();
      const error = this.#listErrors.shift() ?? this.listError;
      // What the server had when it was asked, answered when the test lets it.
      const items = this.items.map((item) => structuredClone(item));
      const resourceVersion = this.resourceVersion;
      await this.#holds.shift();
      if (error) throw error;
      return { items, resourceVersion };
    },
    watch: (_resource: unknown, options: WatchOptions) => {
      const watch = new OpenWatch(options);
      this.watches.push(watch);
      this.#tell();
      return watch.stream();
    },
  } as unknown as KubeClient;

  /** The next list fails with `error` (queued: one list each). */
  failList(error: Error): void {
    this.#listErrors.push(error);
  }

  /** The next list is answered only when the returned function is called. */
  holdList(): () => void {
    const hold = Promise.withResolvers<void>();
    this.#holds.push(hold.promise);
    return hold.resolve;
  }

  /** Resolves once `count` watches in all have been opened; returns the last. */
  async watch(count: number): Promise<OpenWatch> {
    await this.#until(() => this.watches.length >= count);
    return this.watches[count - 1];
  }

  /** Resolves once `count` lists in all have been asked for. */
  async listed(count: number): Promise<void> {
    await this.#until(() => this.lists.length >= count);
  }

  /** Waits until `done`, failing (rather than hanging the test) if it never is. */
  async #until(done: () => boolean): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const gaveUp = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("the informer never got there")), 30_000);
    });
    try {
      while (!done()) {
        await Promise.race([new Promise<void>((resolve) => this.#waiters.push(resolve)), gaveUp]);
      }
    } finally {
      clearTimeout(timer);
    }
  }

  #tell(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }
}
