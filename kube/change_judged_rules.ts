/**
 * Rewrites a CRD schema's CEL rules so that the API server judges an update by the change it
 * makes, not by the state it leaves: an object stored before a rule existed (or before it grew
 * stricter) can still be labelled, annotated, finalized, deleted and edited, as long as the edit
 * does not make it worse.
 *
 * The API server ratchets on its own (CRD validation ratcheting, Kubernetes 1.30 and later): the
 * errors of a value that an update leaves unchanged are ignored. That covers a scalar field's
 * rules and schema keywords, but not a rule on an object, a map or a list once anything inside it
 * changes, and never a rule on the whole object, which every update changes (a label, a
 * finalizer, the garbage collector's patch). Those rules are rewritten as transition rules
 * (`optionalOldSelf: true`, so a create is judged by the rule alone):
 *
 * - `self.all(e, P)` on a map or list whose entries are bounded scalars (a `maxLength` for
 *   strings), entry by entry: an entry that was already there, unchanged, is not held against the
 *   update; a new or changed entry must pass `P`. (Comparing unbounded entries would cost the API
 *   server's CEL budget more than it allows, and the CRD would be refused.)
 * - any other rule: an update passes when the old value broke it too.
 *
 * A rule that already names `oldSelf` judges changes itself and is left alone, and so are rules
 * inside list items, where the API server cannot pair a value with its old one, and rules the
 * caller names in `keep`.
 */

/** A rule of `x-kubernetes-validations`, as far as this module reads and writes it. */
export interface ValidationRule {
  /** The CEL expression, with `self` (and in a transition rule `oldSelf`) bound to the value. */
  rule: string;
  /** What the API server says when the rule fails; a fixed text. */
  message?: string;
  /**
   * A CEL expression that makes the message from the value; used instead of `message` when it
   * yields one.
   */
  messageExpression?: string;
  /** The path of the field to blame, relative to where the rule sits. */
  fieldPath?: string;
  /** The reason the API server gives for the refusal; `FieldValueInvalid` unless set. */
  reason?: string;
  /** Run the rule on create too, with `oldSelf` unset (`optionalOldSelf` of the CRD schema). */
  optionalOldSelf?: boolean;
}

/** What a rule sits on: it decides whether `self.all(…)` is judged entry by entry, and how. */
export type RuleTarget = "object" | "map" | "list";

/**
 * `rule` as a transition rule that judges the change an update makes (see the module's doc);
 * `entries` says whether a map's or list's entries may be compared one by one.
 */
export function changeJudged(
  rule: ValidationRule,
  target: RuleTarget,
  entries: "comparable" | "unbounded" = "comparable",
): ValidationRule {
  if (identifiers(rule.rule).includes("oldSelf")) return rule;
  const old = "oldSelf.value()";
  const all = target === "object" || entries === "unbounded" ? undefined : topLevelAll(rule.rule);
  let judged: string;
  if (all) {
    const unchanged = target === "map"
      ? `${all.entry} in ${old} && ${old}[${all.entry}] == self[${all.entry}]`
      : `${all.entry} in ${old}`;
    judged = `self.all(${all.entry}, (${all.body}) || (oldSelf.hasValue() && ${unchanged}))`;
  } else {
    judged = `(${rule.rule}) || (oldSelf.hasValue() && !(${renameSelf(rule.rule, old)}))`;
  }
  return { ...rule, rule: judged, optionalOldSelf: true };
}

/**
 * The schema with every rule on an object, map or list judged as a change (`changeJudged`);
 * rules of scalars, everything under list items, and the rules `keep` names as they are. A new
 * schema; `schema` is not changed.
 */
export function changeJudgedSchema(
  schema: Record<string, unknown>,
  keep: (rule: ValidationRule) => boolean = () => false,
): Record<string, unknown> {
  const out = { ...schema };
  const properties = schema.properties as Record<string, Record<string, unknown>> | undefined;
  if (properties) {
    out.properties = Object.fromEntries(
      Object.entries(properties).map(([name, p]) => [name, changeJudgedSchema(p, keep)]),
    );
  }
  const values = schema.additionalProperties;
  if (values && typeof values === "object") {
    out.additionalProperties = changeJudgedSchema(values as Record<string, unknown>, keep);
  }
  const target: RuleTarget | undefined = schema.type === "array"
    ? "list"
    : values && typeof values === "object"
    ? "map"
    : schema.type === "object" || properties
    ? "object"
    : undefined;
  const rules = schema["x-kubernetes-validations"] as ValidationRule[] | undefined;
  if (rules && target) {
    const entry = (target === "list" ? schema.items : values) as Record<string, unknown>;
    const entries = target !== "object" && !boundedScalar(entry) ? "unbounded" : "comparable";
    out["x-kubernetes-validations"] = rules.map((rule) =>
      keep(rule) ? rule : changeJudged(rule, target, entries)
    );
  }
  return out;
}

/** Whether values of `schema` cost the API server little to compare: bounded scalars. */
function boundedScalar(schema: Record<string, unknown> | undefined): boolean {
  if (!schema || typeof schema !== "object") return false;
  switch (schema.type) {
    case "integer":
    case "number":
    case "boolean":
      return true;
    case "string":
      return typeof schema.maxLength === "number" && schema.maxLength <= 4096;
    default:
      return false;
  }
}

/**
 * `rule` as a create meets it: each `(oldSelf.hasValue() && …)` part (how `changeJudged` and our
 * own transition rules speak of the old value) is `false`, since a create has none. Undefined for
 * a rule that names `oldSelf` otherwise: a plain transition rule, which a create never meets.
 */
export function asCreate(rule: string): string | undefined {
  const all = [...tokens(rule)];
  let out = "";
  let at = 0;
  const opens: number[] = [];
  for (const [i, token] of all.entries()) {
    if (token.kind === "punct" && token.text === "(") opens.push(i);
    if (token.kind === "punct" && token.text === ")") opens.pop();
    // Inside a part already replaced, or not the old value at all.
    if (token.index < at || token.kind !== "identifier" || token.text !== "oldSelf") continue;
    const group = opens.at(-1);
    const opensGroup = group !== undefined && all[group + 1] === token;
    if (!opensGroup || all[i + 1]?.text !== "." || all[i + 2]?.text !== "hasValue") {
      return undefined;
    }
    const open = all[group].index;
    const close = matchingParen(rule, open);
    if (close < 0) return undefined;
    out += rule.slice(at, open) + "false";
    at = close + 1;
  }
  return out + rule.slice(at);
}

/** `self.all(e, BODY)` as a whole rule: the entry's name and the body; else undefined. */
function topLevelAll(rule: string): { entry: string; body: string } | undefined {
  const start = rule.trim().match(/^self\.all\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,/);
  if (!start) return undefined;
  const text = rule.trim();
  const open = text.indexOf("(");
  const close = matchingParen(text, open);
  if (close !== text.length - 1) return undefined;
  return { entry: start[1], body: text.slice(start[0].length, close).trim() };
}

/** The index of the `)` that closes the `(` at `open`, outside string literals; or -1. */
function matchingParen(text: string, open: number): number {
  let depth = 0;
  for (const token of tokens(text)) {
    if (token.index < open || token.kind !== "punct") continue;
    if (token.text === "(") depth++;
    if (token.text === ")" && --depth === 0) return token.index;
  }
  return -1;
}

/** `rule` with the variable `self` (not a field or a word in a string) replaced by `by`. */
function renameSelf(rule: string, by: string): string {
  let out = "";
  let at = 0;
  for (const token of tokens(rule)) {
    if (token.kind !== "identifier" || token.text !== "self") continue;
    const before = rule.slice(0, token.index).trimEnd();
    if (before.endsWith(".")) continue; // a field named self: `x.self`
    out += rule.slice(at, token.index) + by;
    at = token.index + token.text.length;
  }
  return out + rule.slice(at);
}

function identifiers(rule: string): string[] {
  return [...tokens(rule)].filter((t) => t.kind === "identifier").map((t) => t.text);
}

interface Token {
  kind: "identifier" | "string" | "punct" | "other";
  text: string;
  index: number;
}

/** CEL's tokens as far as the rewrite needs them: identifiers, string literals, punctuation. */
function* tokens(text: string): Generator<Token> {
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (/[A-Za-z_]/.test(c)) {
      const word = text.slice(i).match(/^[A-Za-z_][A-Za-z0-9_]*/)![0];
      // r'…' and b'…' are string literals with a prefix.
      if (
        /^[rRbB]{1,2}$/.test(word) && (text[i + word.length] === "'" ||
          text[i + word.length] === '"')
      ) {
        const end = stringEnd(text, i + word.length, /r/i.test(word));
        yield { kind: "string", text: text.slice(i, end), index: i };
        i = end;
        continue;
      }
      yield { kind: "identifier", text: word, index: i };
      i += word.length;
    } else if (c === "'" || c === '"') {
      const end = stringEnd(text, i, false);
      yield { kind: "string", text: text.slice(i, end), index: i };
      i = end;
    } else if (/[()[\]{},.]/.test(c)) {
      yield { kind: "punct", text: c, index: i };
      i++;
    } else {
      yield { kind: "other", text: c, index: i };
      i++;
    }
  }
}

/** Where the string literal opening at `start` ends (one past its closing quote). */
function stringEnd(text: string, start: number, raw: boolean): number {
  const quote = text[start];
  const triple = text.startsWith(quote.repeat(3), start);
  const closing = triple ? quote.repeat(3) : quote;
  let i = start + closing.length;
  while (i < text.length) {
    if (!raw && text[i] === "\\") {
      i += 2;
      continue;
    }
    if (text.startsWith(closing, i)) return i + closing.length;
    i++;
  }
  return text.length;
}
