/**
 * Converts a Ptemplate between its versions without loss: v1alpha (an alias), v1alpha1 (two
 * spellings of two fields) and v1beta1 (one camelCase spelling each). Which older spelling a
 * v1alpha1 object used travels in an annotation through v1beta1, so the round trip returns it.
 */
import type { Unstructured } from "../mod.ts";
import { PTEMPLATE, V1ALPHA1_ALIASES, V1BETA1_FIELDS } from "./ptemplate.ts";

/** The v1alpha1 spellings a v1beta1 object came from, comma-separated (`consumer,imagePullSecret`). */
export const SPELLINGS_ANNOTATION = "pt.example.com/v1alpha1-spellings";

type Spec = Record<string, unknown>;

const BETA_TO_ALPHA = Object.fromEntries(Object.entries(V1BETA1_FIELDS).map(([a, b]) => [b, a]));

function versionOf(apiVersion: string | undefined): string {
  return (apiVersion ?? "").split("/")[1] ?? "";
}

/** `object` as `apiVersion` (`pt.example.com/v1beta1`, …); throws for a version we do not know. */
export function convertPtemplate(object: Unstructured, apiVersion: string): Unstructured {
  const [group, to] = apiVersion.split("/");
  const from = versionOf(object.apiVersion);
  for (const version of [from, to]) {
    if (group !== PTEMPLATE.group || !["v1alpha", "v1alpha1", "v1beta1"].includes(version)) {
      throw new TypeError(`cannot convert a Ptemplate from ${object.apiVersion} to ${apiVersion}`);
    }
  }
  const out = structuredClone(object) as Unstructured & { spec?: Spec };
  out.apiVersion = apiVersion;
  const beta = (v: string) => v === "v1beta1";
  if (beta(from) === beta(to) || !out.spec) return out;
  const annotations = { ...out.metadata?.annotations };
  const carried = annotations[SPELLINGS_ANNOTATION];
  delete annotations[SPELLINGS_ANNOTATION];
  const spec: Spec = {};
  if (beta(to)) {
    // v1alpha1 → v1beta1: canonical names; the older spellings used are remembered, and so is
    // any value the v1alpha1 object itself had under the annotation (after a `;`).
    const spellings: string[] = [];
    for (const [field, value] of Object.entries(out.spec)) {
      const canonical = V1ALPHA1_ALIASES[field as keyof typeof V1ALPHA1_ALIASES];
      if (canonical) spellings.push(field);
      const alpha = canonical ?? field;
      spec[V1BETA1_FIELDS[alpha as keyof typeof V1BETA1_FIELDS] ?? alpha] = value;
    }
    const remembered = spellings.sort().join(",") + (carried === undefined ? "" : `;${carried}`);
    if (remembered) annotations[SPELLINGS_ANNOTATION] = remembered;
  } else {
    // v1beta1 → v1alpha1: the v1alpha1 names, in the spelling the object first came with.
    const [used, ...original] = (carried ?? "").split(";");
    const spellings = new Set(used.split(",").filter(Boolean));
    if (original.length) annotations[SPELLINGS_ANNOTATION] = original.join(";");
    for (const [field, value] of Object.entries(out.spec)) {
      const alpha = BETA_TO_ALPHA[field] ?? field;
      const alias = Object.entries(V1ALPHA1_ALIASES).find(([a, c]) =>
        c === alpha && spellings.has(a)
      );
      spec[alias ? alias[0] : alpha] = value;
    }
  }
  out.spec = spec;
  if (out.metadata) {
    if (Object.keys(annotations).length) out.metadata.annotations = annotations;
    else delete out.metadata.annotations;
  } else if (Object.keys(annotations).length) {
    out.metadata = { annotations };
  }
  return out;
}
