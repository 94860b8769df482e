/**
 * Converts a Ptemplate between its versions without loss: v1alpha (an alias), v1alpha1 (two
 * spellings of two fields) and v1beta1 (one camelCase spelling each). Which older spelling a
 * v1alpha1 object used travels in an annotation through v1beta1, so the round trip returns it.
 * What it does not understand it refuses, in words: an object whose shape does not fit its
 * version's schema (a field that version does not have, such as v1alpha1's `maxdev` in a v1beta1
 * object, a spec that is not an object), both spellings of one field, a version it does not know.
 * It never invents a field and never drops one. Bounds (lengths, counts, ranges) are the API
 * server's to judge, never the conversion's: an object stored before a bound existed converts.
 */
import { ConversionError, objectProblems, type OpenApiSchema, type Unstructured } from "../mod.ts";
import {
  PTEMPLATE,
  ptemplateCrdWithConversion,
  V1ALPHA1_ALIASES,
  V1BETA1_FIELDS,
} from "./ptemplate.ts";

/** The v1alpha1 spellings a v1beta1 object came from, comma-separated (`consumer,imagePullSecret`). */
export const SPELLINGS_ANNOTATION = "pt.example.com/v1alpha1-spellings";

/** The CRD with every version the conversion serves (the client config is the deployer's). */
export const PTEMPLATE_VERSIONS_CRD: Unstructured = ptemplateCrdWithConversion({});

type Spec = Record<string, unknown>;

// Maps, not object literals: a field named `constructor` or `toString` is not one of ours.
const TO_BETA = new Map<string, string>(Object.entries(V1BETA1_FIELDS));
const TO_ALPHA = new Map<string, string>(Object.entries(V1BETA1_FIELDS).map(([a, b]) => [b, a]));
const ALIASES = new Map<string, string>(Object.entries(V1ALPHA1_ALIASES));
const VERSIONS = new Map<string, OpenApiSchema>(
  (PTEMPLATE_VERSIONS_CRD.spec as {
    versions: { name: string; schema: { openAPIV3Schema: OpenApiSchema } }[];
  }).versions.map((v) => [v.name, v.schema.openAPIV3Schema]),
);

function versionOf(apiVersion: unknown): string | undefined {
  if (typeof apiVersion !== "string") return undefined;
  const [group, version, ...more] = apiVersion.split("/");
  return group === PTEMPLATE.group && !more.length && VERSIONS.has(version) ? version : undefined;
}

const known = () => [...VERSIONS.keys()].map((v) => `${PTEMPLATE.group}/${v}`).join(", ");

/** `object` as `apiVersion` (`pt.example.com/v1beta1`, …); a ConversionError for what it cannot. */
export function convertPtemplate(object: Unstructured, apiVersion: string): Unstructured {
  const to = versionOf(apiVersion);
  if (!to) {
    throw new ConversionError(
      `cannot convert a Ptemplate to that version: ${known()} are served`,
    );
  }
  const from = versionOf(object.apiVersion);
  if (!from) throw new ConversionError(`cannot convert from that version: ${known()} are served`);
  if (object.kind !== PTEMPLATE.kind) throw new ConversionError("the object is not a Ptemplate");
  // The shape only: an object stored before a bound existed (a length, a count) still converts.
  const problems = objectProblems(object, VERSIONS.get(from)!, { bounds: false });
  if (problems.length) {
    throw new ConversionError(problems.map((p) => withHint(p, from)).join("; "));
  }
  const spec = object.spec as Spec | undefined;
  if (spec && !beta(from)) {
    for (const [alias, canonical] of ALIASES) {
      if (Object.hasOwn(spec, alias) && Object.hasOwn(spec, canonical)) {
        throw new ConversionError(
          `spec.${canonical} and spec.${alias} are two spellings of one field: set one of them`,
        );
      }
    }
  }
  const out = structuredClone(object) as Unstructured & { spec?: Spec };
  out.apiVersion = `${PTEMPLATE.group}/${to}`;
  if (beta(from) === beta(to) || !spec) return out;
  const annotations: Record<string, string> = { ...out.metadata?.annotations };
  const carried = annotations[SPELLINGS_ANNOTATION];
  delete annotations[SPELLINGS_ANNOTATION];
  out.spec = beta(to) ? toBeta(spec, carried, annotations) : toAlpha(spec, carried, annotations);
  if (out.metadata) {
    if (Object.keys(annotations).length) out.metadata.annotations = annotations;
    else delete out.metadata.annotations;
  } else if (Object.keys(annotations).length) {
    out.metadata = { annotations };
  }
  return out;
}

const beta = (version: string) => version === "v1beta1";

/**
 * v1alpha1 → v1beta1: canonical names; the older spellings used are remembered, and so is any
 * value the v1alpha1 object itself had under the annotation (after a `;`).
 */
function toBeta(spec: Spec, carried: string | undefined, annotations: Record<string, string>) {
  const out: Spec = {};
  const spellings: string[] = [];
  for (const [field, value] of Object.entries(spec)) {
    const canonical = ALIASES.get(field);
    if (canonical) spellings.push(field);
    out[renamed(TO_BETA, canonical ?? field, "v1alpha1")] = value;
  }
  const remembered = spellings.sort().join(",") + (carried === undefined ? "" : `;${carried}`);
  if (remembered) annotations[SPELLINGS_ANNOTATION] = remembered;
  return out;
}

/** v1beta1 → v1alpha1: the v1alpha1 names, in the spelling the object first came with. */
function toAlpha(spec: Spec, carried: string | undefined, annotations: Record<string, string>) {
  const out: Spec = {};
  const [used, ...original] = (carried ?? "").split(";");
  const spellings = new Set(used.split(",").filter(Boolean));
  if (original.length) annotations[SPELLINGS_ANNOTATION] = original.join(";");
  for (const [field, value] of Object.entries(spec)) {
    const alpha = renamed(TO_ALPHA, field, "v1beta1");
    const alias = [...ALIASES].find(([a, c]) => c === alpha && spellings.has(a));
    out[alias ? alias[0] : alpha] = value;
  }
  return out;
}

/** A field's name in the other version; the schema check has refused any other, so this is a bug. */
function renamed(names: Map<string, string>, field: string, version: string): string {
  const name = names.get(field);
  if (name === undefined) {
    throw new ConversionError(`spec.${field}: no counterpart of this ${version} field`);
  }
  return name;
}

/** An unknown field of one version that is a field of the other: say what it is called here. */
function withHint(problem: string, version: string): string {
  const match = problem.match(/^spec\.(\w+): unknown field$/);
  if (!match) return problem;
  const field = match[1];
  const here = beta(version) ? TO_BETA.get(ALIASES.get(field) ?? field) : TO_ALPHA.get(field);
  return here
    ? `${problem} in ${PTEMPLATE.group}/${version} (its name there is spec.${here})`
    : problem;
}
