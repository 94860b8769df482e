/**
 * The finalizer example: a Guest signs the namespace's shared `guestbook` ConfigMap, and signs
 * out before it goes. The entry lives in an object the Guest does not own, so owner references
 * cannot clean it up; the plugin's `finalize` does.
 */
import {
  CONFIG_MAP,
  customResourceDefinition,
  definePlugin,
  isApiError,
  type KubeObject,
  type ReconcileContext,
  type Resource,
  scoped,
  type Stored,
  type Unstructured,
  watch,
} from "../../mod.ts";
import type { GuestSpec, GuestStatus } from "./guest_types.ts";

export const GUEST: Resource<Guest, true> = {
  group: "example.ptemplate.dev",
  version: "v1",
  kind: "Guest",
  plural: "guests",
  namespaced: true,
};

/** Its spec and status types are generated from the schema below (`deno task crds`). */
export interface Guest extends KubeObject {
  spec: GuestSpec;
  status?: GuestStatus;
}

export const GUEST_CRD: Unstructured = customResourceDefinition(GUEST, {
  spec: {
    type: "object",
    required: ["greeting"],
    properties: { greeting: { type: "string", minLength: 1, maxLength: 256 } },
  },
  status: { signed: { type: "boolean" } },
});

/** The shared book, one per namespace. */
export const GUESTBOOK = "guestbook";
/** Only the books are cached, not every ConfigMap. */
const GUESTBOOKS = scoped(CONFIG_MAP, { fieldSelector: `metadata.name=${GUESTBOOK}` });

/** Writes (or, with `null`, erases) one guest's line; creates the book when there is none. */
async function sign(
  context: ReconcileContext,
  guest: Stored<Guest, true>,
  line: string | null,
): Promise<void> {
  const namespace = guest.metadata.namespace;
  const data = { [guest.metadata.name]: line };
  try {
    await context.client.patch(CONFIG_MAP, GUESTBOOK, { data }, {
      namespace,
      fieldManager: "guestbook",
      signal: context.signal,
    });
  } catch (error) {
    if (!isApiError(error, 404)) throw error;
    if (line === null) return; // no book, nothing to erase
    await context.client.create(CONFIG_MAP, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: GUESTBOOK, namespace },
      data,
    }, { fieldManager: "guestbook", signal: context.signal });
  }
}

export const guestbookPlugin = definePlugin({
  name: "guestbook",
  for: GUEST,
  // The book is written by hand: it is shared, not a child.
  permissions: [{ resource: CONFIG_MAP, verbs: ["create", "patch"] }],
  watches: [watch(GUESTBOOKS, {
    // A changed book: every guest of its namespace checks its line.
    map: (book, { cache }) =>
      cache(GUEST).list({ namespace: book.metadata.namespace }).map((g) => ({
        namespace: g.metadata.namespace,
        name: g.metadata.name,
      })),
  })],
  async reconcile(guest, context) {
    const book = context.cache(GUESTBOOKS).get(guest.metadata.namespace, GUESTBOOK);
    if (book?.data?.[guest.metadata.name] !== guest.spec.greeting) {
      await sign(context, guest, guest.spec.greeting);
    }
    return { status: { signed: true } };
  },
  // Idempotent: erasing a line that is not there (or from a book that is gone) is success.
  async finalize(guest, context) {
    await sign(context, guest, null);
  },
});
