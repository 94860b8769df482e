/**
 * What a dry run would change, by object: the children it would create, update (and where),
 * replace or delete, the fields others added that it would take out, the status it would write,
 * the finalizers it would add or remove, the Events it would record. A dry run (`run --dry-run`)
 * sends every child write as a server-side dry run and writes no status, Event or finalizer: this
 * is what it says instead, per object as it goes and as a summary after one pass.
 */
import type { EventRecorder, Logger, Registry } from "../observe/mod.ts";

/** One thing a dry run would do to, or for, an object. */
export interface WouldChange {
  /** `create`, `update`, `replace`, `delete`, `remove-fields`, `status`, `finalizer`, `event`. */
  verb: string;
  /** What: `DaemonSet x-consumer`, `status`, `finalizer example.com/cleanup`. */
  what: string;
  /** Where it differs, or why, when known: `at spec.template.spec.containers[0].image`. */
  detail?: string;
  /** The plugin that would do it. */
  controller: string;
}

/** An object and what a dry run would change of it. */
export interface DryRunObject {
  /** `Kind namespace/name`. */
  object: string;
  /** Its kind, for the summary per kind. */
  kind: string;
  /** What would change of it, in the order found. */
  changes: WouldChange[];
}

/** What a dry run found: told change by change, kept by object, summed up per kind. */
export class DryRunReport {
  readonly #objects = new Map<string, DryRunObject>();
  readonly #log?: Logger;
  #counted?: (labels: { controller: string; verb: string }) => void;

  /** Says each change in `log` as it comes, when given. */
  constructor(log?: Logger) {
    this.#log = log;
  }

  /** Counts each change from now on in `registry`'s `dry_run_changes_total{controller,verb}`. */
  register(registry: Registry): void {
    const counter = registry.counter(
      "dry_run_changes_total",
      "Changes a dry run would make, by plugin and verb (nothing is stored)",
      ["controller", "verb"],
    );
    this.#counted = (labels) => counter.inc(labels);
  }

  /** `object` (of `kind`) would get `change`. The same change said twice is kept once. */
  would(object: string, kind: string, change: WouldChange): void {
    let entry = this.#objects.get(object);
    if (!entry) this.#objects.set(object, entry = { object, kind, changes: [] });
    const same = entry.changes.some((c) =>
      c.verb === change.verb && c.what === change.what && c.controller === change.controller
    );
    if (same) return;
    entry.changes.push(change);
    this.#counted?.({ controller: change.controller, verb: change.verb });
    this.#log?.info("would {verb} {what} of {object}{detail}", {
      verb: change.verb,
      what: change.what,
      object,
      detail: change.detail ? ` (${change.detail})` : "",
      controller: change.controller || undefined,
    });
  }

  /** An EventRecorder that tells each Event to this report instead of writing it. */
  events(): EventRecorder {
    return {
      record: (object, event) => {
        const meta = object.metadata ?? {};
        const kind = object.kind ?? "object";
        this.would(`${kind} ${meta.namespace ? `${meta.namespace}/` : ""}${meta.name}`, kind, {
          verb: "event",
          what: `${event.type ?? "Normal"} ${event.reason}`,
          detail: event.message,
          controller: "",
        });
      },
    };
  }

  /** The objects with a change, in the order first seen. */
  objects(): DryRunObject[] {
    return [...this.#objects.values()];
  }

  /**
   * One line per kind: `would change 31 of 10000 Ptemplates: 20 update Module, 11 create
   * DaemonSet`. `totals` says how many objects of each kind there are.
   */
  summary(totals: Record<string, number>): string[] {
    return Object.entries(totals).map(([kind, total]) => {
      const changed = this.objects().filter((o) => o.kind === kind);
      const counts = new Map<string, number>();
      for (const { changes } of changed) {
        for (const c of changes) {
          const what = c.verb === "status" || c.verb === "finalizer" || c.verb === "event"
            ? c.verb
            : `${c.verb} ${c.what.split(" ")[0]}`;
          counts.set(what, (counts.get(what) ?? 0) + 1);
        }
      }
      const details = [...counts].map(([what, n]) => `${n} ${what}`).join(", ");
      return `would change ${changed.length} of ${total} ${kind}(s)${
        details ? `: ${details}` : ""
      }`;
    });
  }
}
