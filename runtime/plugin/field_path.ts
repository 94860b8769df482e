/**
 * The field paths a plugin names in `tolerate` (`spec.replicas`,
 * `spec.template.metadata.annotations["example.com/x"]`, `[*]` for any list item), parsed when the
 * plugin is declared, so a typo fails at registration.
 */

/** One step of a path: a field name, a map key, or `*` for any item of a list. */
export type Segment = string;

/**
 * Parses a tolerated path: names separated by dots, `["key"]` for a key with dots or slashes in
 * it, `[*]` for any item of a list. Throws on anything else, so a typo fails at registration.
 */
export function parseFieldPath(path: string): Segment[] {
  const segments: Segment[] = [];
  const pattern = /\[\*\]|\["([^"]+)"\]|([^.[\]"]+)|\./gy;
  let match: RegExpExecArray | null;
  let at = 0;
  while (at < path.length && (match = pattern.exec(path))) {
    at = pattern.lastIndex;
    if (match[0] === ".") continue;
    segments.push(match[0] === "[*]" ? "*" : match[1] ?? match[2]);
  }
  if (at !== path.length || !segments.length) {
    throw new TypeError(
      `"${path}" is not a field path such as spec.template.metadata.annotations["example.com/x"]`,
    );
  }
  return segments;
}
