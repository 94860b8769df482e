/**
 * A DaemonSet's status update, as its watch event comes, taken into the cache as an informer takes
 * it (kept_version.ts: projected, slimmed, interned beside the version held; then stored, and
 * judged by two readers), against parsing the event alone: Deno reports the ratio.
 */
import type { KubeObject } from "../../kube/object.ts";
import { DAEMON_SET } from "../../kube/kinds.ts";
import { Interner } from "./interner.ts";
import { keptVersion } from "./kept_version.ts";
import { projector } from "./projection.ts";
import { relevantChange } from "./relevant_change.ts";
import { Store } from "./store.ts";

/** A DaemonSet the operator applied, with the DaemonSet controller's status, from an API server. */
const captured: { object: KubeObject & { status: Record<string, unknown> } } = JSON.parse(
  await Deno.readTextFile(new URL("./testdata/daemon_set_event.json", import.meta.url)),
);

const COUNT = 1000;
const { object } = captured;
const parentUid = object.metadata!.ownerReferences![0].uid;
const parentName = object.metadata!.ownerReferences![0].name;
// A thousand DaemonSets of a thousand Ptemplates; each round's events carry a newer
// resourceVersion and another status, so each is news.
const template = JSON.stringify({
  type: "MODIFIED",
  object: {
    ...object,
    metadata: { ...object.metadata, uid: "@UID@", resourceVersion: "@RV@" },
    status: { ...object.status, numberReady: "@READY@" },
  },
}).replace('"@READY@"', "@READY@");
const templates = Array.from({ length: COUNT }, (_, i) => {
  const uid = (n: number) => `${String(n).padStart(8, "0")}-0000-4000-8000-000000000000`;
  return template.replaceAll(parentUid, uid(i)).replaceAll(parentName, `pt-${i}`)
    .replace("@UID@", uid(COUNT + i));
});
let rounds = 0;
/** The events of one round: resourceVersions newer than any before, and the status `ready`. */
const events = (ready: number) => {
  rounds++;
  return templates.map((text, i) =>
    text.replace("@RV@", String(rounds * COUNT + i)).replace("@READY@", String(ready))
  );
};

// What the pool asks of a DaemonSet's cache: its status and what its managers set, the field sets
// of other managers than ours.
const keeping = {
  projector: projector({ fields: ["status"], managed: true }),
  slim: { keepFieldSetsExcept: new Set(["consumer-daemonset"]) },
  interner: new Interner(),
};
const store = new Store<KubeObject>(DAEMON_SET);
// Two readers, as the flagship has: the DaemonSet's owner reads none of its fields, the status
// aggregator its status.
const readers = [relevantChange([]), relevantChange(["status"])];
let news = 0;

const take = (text: string) => {
  const { object } = JSON.parse(text) as { object: KubeObject };
  const change = store.upsert(keptVersion(object, store.current(object), keeping));
  if (change?.type === "updated") {
    for (const relevant of readers) if (relevant(change.old, change.object)) news++;
  }
};
let taken = 0;
for (const text of events(taken++ % 2)) take(text);

Deno.bench(
  { name: "JSON.parse 1000 DaemonSet status updates", group: "watch event", baseline: true },
  () => {
    for (const text of events(0)) JSON.parse(text);
  },
);

Deno.bench({ name: "…and take each into the cache", group: "watch event" }, () => {
  const before = news;
  for (const text of events(taken++ % 2)) take(text);
  // Each update is news to the reader of the status, and to no one else.
  if (news - before !== COUNT) throw new Error(`${news - before} readers told, not ${COUNT}`);
});
