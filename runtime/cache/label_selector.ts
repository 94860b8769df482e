/** Parses and matches Kubernetes label selectors, so the cache answers the queries the API server would. */

/** One requirement of a selector. */
export interface Requirement {
  /** The label. */
  key: string;
  /** How its value is compared. */
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
  /** The values `In` and `NotIn` compare with. */
  values: string[];
}

/** A label selector: every requirement must hold. */
export type Selector = Requirement[];

/**
 * Parses the string form (`a=b,c!=d,e in (x,y),f notin (z),g,!h`). Throws a TypeError naming the
 * bad part, like the API server's 400.
 */
export function parseSelector(text: string): Selector {
  const requirements: Selector = [];
  // Split on commas outside parentheses.
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === "(") depth++;
    else if (char === ")") depth--;
    else if (char === "," && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  const last = text.slice(start);
  if (last.trim() || parts.length) parts.push(last);
  for (const raw of parts) {
    const part = raw.trim();
    if (!part) throw new TypeError(`label selector "${text}" has an empty requirement`);
    let match: RegExpMatchArray | null;
    if ((match = part.match(/^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/))) {
      requirements.push({
        key: match[1],
        operator: match[2] === "in" ? "In" : "NotIn",
        values: match[3].split(",").map((v) => v.trim()).filter(Boolean),
      });
    } else if ((match = part.match(/^([^!=\s]+)\s*(==|=|!=)\s*(\S*)$/))) {
      requirements.push({
        key: match[1],
        operator: match[2] === "!=" ? "NotIn" : "In",
        values: [match[3]],
      });
    } else if ((match = part.match(/^!\s*(\S+)$/))) {
      requirements.push({ key: match[1], operator: "DoesNotExist", values: [] });
    } else if ((match = part.match(/^([^!=\s()]+)$/))) {
      requirements.push({ key: match[1], operator: "Exists", values: [] });
    } else {
      throw new TypeError(`label selector "${text}": cannot parse "${part}"`);
    }
  }
  return requirements;
}

/** The structured form (`matchLabels`, `matchExpressions`) as requirements. */
export function fromLabelSelector(selector: {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}): Selector {
  return [
    ...Object.entries(selector.matchLabels ?? {}).map(([key, value]) => ({
      key,
      operator: "In" as const,
      values: [value],
    })),
    ...(selector.matchExpressions ?? []).map((e) => ({
      key: e.key,
      operator: e.operator as Requirement["operator"],
      values: e.values ?? [],
    })),
  ];
}

/** True when `labels` satisfy every requirement. */
export function matchesSelector(selector: Selector, labels: Record<string, string>): boolean {
  return selector.every(({ key, operator, values }) => {
    const has = Object.hasOwn(labels, key);
    switch (operator) {
      case "In":
        return has && values.includes(labels[key]);
      case "NotIn":
        return !has || !values.includes(labels[key]);
      case "Exists":
        return has;
      case "DoesNotExist":
        return !has;
    }
  });
}
