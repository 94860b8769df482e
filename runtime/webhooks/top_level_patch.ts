/**
 * What a plugin's defaulting changed, as the JSON Patch a mutating webhook answers: one operation
 * per top-level field added, replaced or removed (a field's whole value, never a diff within it).
 */
import type { KubeObject } from "../../kube/object.ts";

/** JSON Patch operations that turn `before` into `after`, field by field under the top level. */
export function topLevelPatch(before: KubeObject, after: KubeObject): unknown[] {
  const ops: unknown[] = [];
  const a = before as Record<string, unknown>;
  const b = after as Record<string, unknown>;
  const escape = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (JSON.stringify(a[key]) === JSON.stringify(b[key])) continue;
    if (!Object.hasOwn(b, key)) ops.push({ op: "remove", path: `/${escape(key)}` });
    else {
      ops.push({
        op: Object.hasOwn(a, key) ? "replace" : "add",
        path: `/${escape(key)}`,
        value: b[key],
      });
    }
  }
  return ops;
}
