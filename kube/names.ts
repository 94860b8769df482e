/**
 * The API server's grammars for names (apimachinery's `IsDNS1123Label`, `IsDNS1123Subdomain`,
 * `IsDNS1035Label`), so a name it would refuse is refused before the first request, in its words,
 * with a name it would take.
 */

/** Which grammar a name must follow: namespaces are labels, Leases and pods subdomains, Services DNS-1035 labels. */
export type NameGrammar = "label" | "subdomain" | "dns1035";

const LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const PATTERNS: Record<NameGrammar, { regex: RegExp; max: number; says: string }> = {
  label: {
    regex: new RegExp(`^${LABEL}$`),
    max: 63,
    says: "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or " +
      "'-', and must start and end with an alphanumeric character",
  },
  subdomain: {
    regex: new RegExp(`^${LABEL}(\\.${LABEL})*$`),
    max: 253,
    says: "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, " +
      "'-' or '.', and must start and end with an alphanumeric character",
  },
  dns1035: {
    regex: /^[a-z]([-a-z0-9]*[a-z0-9])?$/,
    max: 63,
    says: "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start " +
      "with an alphabetic character, and end with an alphanumeric character",
  },
};

/** Why the API server would refuse `name` under `grammar`, in its words; undefined when it would not. */
export function nameProblem(name: string, grammar: NameGrammar): string | undefined {
  const { regex, max, says } = PATTERNS[grammar];
  if (name.length > max) return `must be no more than ${max} characters (it has ${name.length})`;
  return regex.test(name) ? undefined : says;
}

/**
 * A name close to `name` that `grammar` allows (lower case, other characters as `-`, trimmed to
 * the length), or undefined when nothing of it is left.
 */
export function suggestedName(name: string, grammar: NameGrammar): string | undefined {
  const { max } = PATTERNS[grammar];
  const allowed = grammar === "subdomain" ? /[^a-z0-9.-]+/g : /[^a-z0-9-]+/g;
  let out = name.toLowerCase().replace(allowed, "-");
  if (grammar === "subdomain") {
    out = out.split(".").map((part) => part.replace(/^-+|-+$/g, "")).filter(Boolean).join(".");
  }
  out = out.slice(0, max).replace(/^[-.]+|[-.]+$/g, "");
  if (grammar === "dns1035") out = out.replace(/^[^a-z]+/, "");
  out = out.replace(/-+$/, "");
  return out && nameProblem(out, grammar) === undefined ? out : undefined;
}
