/**
 * The `useless-machine` plugin (seed 002): keeps `spec.switches` Switches labelled for each
 * Machine, flips any switch that is not `down` back after a delay (one switch per machine per
 * delay period), and reports `status.positions`. Switches have generated names and a position
 * people change, so this plugin uses the client in its context instead of returning children.
 */
import {
  controllerOf,
  controllerReference,
  definePlugin,
  type Plugin,
  type ReconcileContext,
  type Stored,
  watch,
} from "../../mod.ts";
import { MACHINE, type Machine, MACHINE_LABEL, SWITCH, type Switch } from "./crd.ts";

export interface UselessMachineOptions {
  /**
   * How long a switch stays up, counted from when the machine first saw it so; default 5 s. It
   * is also the least time between two flips on one machine.
   */
  flipDelayMs?: number;
}

/** How long a write we made may take to show up in the cache before we stop expecting it. */
const EXPECTATION_TTL_MS = 60_000;

/**
 * Writes this process made that the cache may not show yet, per machine: without them a
 * reconcile right after creating switches would count too few and create more (the ReplicaSet
 * controller keeps the same kind of "expectations").
 */
class Expectations {
  readonly #created = new Map<string, Map<string, number>>();
  readonly #deleted = new Map<string, Map<string, number>>();
  readonly #flips = new Map<string, number>();

  created(machine: string, name: string): void {
    this.#entry(this.#created, machine).set(name, Date.now());
  }
  deleted(machine: string, name: string): void {
    this.#entry(this.#deleted, machine).set(name, Date.now());
  }
  flipped(machine: string, at: number): void {
    this.#flips.set(machine, at);
  }
  lastFlip(machine: string): number {
    return this.#flips.get(machine) ?? 0;
  }

  /** Created names the cache does not show yet, and deleted names it still shows. */
  pending(machine: string, cached: Set<string>): { created: string[]; deleted: Set<string> } {
    const now = Date.now();
    const created = this.#entry(this.#created, machine);
    const deleted = this.#entry(this.#deleted, machine);
    for (const [name, at] of created) {
      if (cached.has(name) || now - at > EXPECTATION_TTL_MS) created.delete(name);
    }
    for (const [name, at] of deleted) {
      if (!cached.has(name) || now - at > EXPECTATION_TTL_MS) deleted.delete(name);
    }
    return { created: [...created.keys()], deleted: new Set(deleted.keys()) };
  }

  forget(machine: string): void {
    this.#created.delete(machine);
    this.#deleted.delete(machine);
    this.#flips.delete(machine);
  }

  #entry(map: Map<string, Map<string, number>>, machine: string): Map<string, number> {
    let entry = map.get(machine);
    if (!entry) map.set(machine, entry = new Map());
    return entry;
  }
}

function byAge(a: Switch, b: Switch): number {
  const at = (s: Switch) => s.metadata?.creationTimestamp ?? "";
  return at(a).localeCompare(at(b)) ||
    (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? "");
}

async function createSwitch(
  client: ReconcileContext["client"],
  machine: Stored<Machine, true>,
  signal: AbortSignal,
): Promise<string> {
  const created = await client.create(SWITCH, {
    metadata: {
      generateName: "switch-",
      namespace: machine.metadata.namespace,
      labels: { [MACHINE_LABEL]: machine.metadata.name },
      ownerReferences: [controllerReference(machine)],
    },
    spec: { position: "down" },
  }, { signal });
  return created.metadata.name;
}

export function createUselessMachinePlugin(options: UselessMachineOptions = {}): Plugin<Machine> {
  const delay = options.flipDelayMs ?? 5_000;
  const expectations = new Expectations();
  return definePlugin({
    name: "useless-machine",
    for: MACHINE,
    // Owned: deleting a machine deletes its switches, and a switch's changes reach its owner.
    owns: [SWITCH],
    // Switches are also made, flipped and marked by hand (generated names, one at a time).
    permissions: [{ resource: SWITCH, verbs: ["patch"], subresource: "status" }],
    // And by label, so a switch relabelled to another machine reaches that one too.
    watches: [watch(SWITCH, {
      map: (sw) => {
        const machine = sw.metadata.labels?.[MACHINE_LABEL];
        return machine ? [{ namespace: sw.metadata.namespace, name: machine }] : [];
      },
    })],
    async reconcile(machine, { client, cache, signal, log }) {
      const namespace = machine.metadata.namespace;
      const uid = machine.metadata.uid;
      const key = `${namespace}/${machine.metadata.name}`;
      const now = Date.now();
      const listed = cache(SWITCH)
        .list({ namespace, labelSelector: `${MACHINE_LABEL}=${machine.metadata.name}` })
        .filter((sw) => !sw.metadata.deletionTimestamp);
      const pending = expectations.pending(key, new Set(listed.map((sw) => sw.metadata.name)));
      const switches = listed.filter((sw) => !pending.deleted.has(sw.metadata.name)).sort(byAge);

      // A switch relabelled to this machine becomes ours, so it goes away with us, not its old machine.
      for (const sw of switches) {
        const owner = controllerOf(sw);
        if (owner?.uid === uid) continue;
        await client.patch(SWITCH, sw.metadata.name, {
          metadata: { ownerReferences: [controllerReference(machine)] },
        }, { namespace, signal });
        log.info("adopted switch {switch}", { switch: sw.metadata.name });
      }

      const want = machine.spec.switches;
      const have = switches.length + pending.created.length;
      for (let i = have; i < want; i++) {
        expectations.created(key, await createSwitch(client, machine, signal));
      }
      // Scale down: the newest switches go first.
      for (const sw of switches.slice(Math.max(0, want - pending.created.length)).reverse()) {
        await client.delete(SWITCH, sw.metadata.name, { namespace, signal });
        expectations.deleted(key, sw.metadata.name);
      }
      const kept = switches.slice(0, Math.max(0, want - pending.created.length));

      // Flip: each up switch is due `delay` after we first saw it; one flip per machine per `delay`.
      const recorded = machine.status?.lastFlip ? Date.parse(machine.status.lastFlip) : 0;
      let lastFlip = Math.max(recorded, expectations.lastFlip(key));
      let nextVisit = Infinity;
      const positions: string[] = [];
      for (const sw of kept) {
        const name = sw.metadata.name;
        const seenAt = sw.status?.seenAt ? Date.parse(sw.status.seenAt) : undefined;
        if (sw.spec.position === "down") {
          positions.push("d");
          if (seenAt !== undefined) {
            await client.patch(SWITCH, name, { status: { seenAt: null } }, {
              namespace,
              subresource: "status",
              signal,
            });
          }
          continue;
        }
        if (seenAt === undefined) {
          await client.patch(SWITCH, name, { status: { seenAt: new Date(now).toISOString() } }, {
            namespace,
            subresource: "status",
            signal,
          });
          nextVisit = Math.min(nextVisit, delay);
          positions.push(sw.spec.position[0]);
          continue;
        }
        const flipAt = Math.max(seenAt + delay, lastFlip + delay);
        if (now >= flipAt) {
          await client.patch(SWITCH, name, { spec: { position: "down" } }, { namespace, signal });
          await client.patch(SWITCH, name, { status: { seenAt: null } }, {
            namespace,
            subresource: "status",
            signal,
          });
          lastFlip = now;
          expectations.flipped(key, now);
          log.info("flipped switch {switch} down", { switch: name });
          positions.push("d");
        } else {
          nextVisit = Math.min(nextVisit, flipAt - now);
          positions.push(sw.spec.position[0]);
        }
      }
      // A flip just now pushes every other due switch back by a delay.
      if (lastFlip === now && positions.some((p) => p !== "d")) {
        nextVisit = Math.min(nextVisit, delay);
      }
      return {
        status: {
          // Switches created but not cached yet are down.
          positions: positions.join("") + "d".repeat(Math.max(0, want - kept.length)),
          ...(lastFlip ? { lastFlip: new Date(lastFlip).toISOString() } : {}),
        },
        requeueAfterMs: Number.isFinite(nextVisit) ? Math.ceil(nextVisit) : undefined,
      };
    },
    onDeleted(ref) {
      expectations.forget(`${ref.namespace}/${ref.name}`);
    },
  });
}

/** The plugin with its default 5 s delay, as the catalog registers it. */
export const uselessMachinePlugin: Plugin<Machine> = createUselessMachinePlugin();
