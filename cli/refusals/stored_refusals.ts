/**
 * Finds the stored objects of each CRD's kind that this version's rules would refuse if they were
 * written anew (`refusals_as_new.ts`), for `check` and `install`: objects an earlier release let
 * in, which keep working and stay writable, but should be fixed.
 */
import {
  isApiError,
  type KubeClient,
  type Resource,
  storedVersion,
  type Unstructured,
} from "../../kube/mod.ts";
import { refusalsAsNew } from "./refusals_as_new.ts";

/** One CRD's findings: how many objects it has, and the lines for those that break a rule. */
export interface StoredRefusals {
  kind: string;
  /** False when the CRD is not installed: then nothing is stored. */
  installed: boolean;
  objects: number;
  /** `<Kind> <namespace>/<name>: <field>: <why>`, one per rule broken. */
  lines: string[];
  /** How many objects break at least one rule. */
  breaking: number;
}

/** Reads every object of `crd`'s kind (in its stored version) and judges each as new. */
export async function storedRefusals(
  client: KubeClient,
  crd: Unstructured,
): Promise<StoredRefusals> {
  const spec = crd.spec as {
    group: string;
    scope: string;
    names: { kind: string; plural: string };
  };
  const resource: Resource = {
    group: spec.group,
    version: storedVersion(crd).name,
    kind: spec.names.kind,
    plural: spec.names.plural,
    namespaced: spec.scope === "Namespaced",
  };
  const kind = spec.names.kind;
  let items: Unstructured[];
  try {
    items = (await client.listAll(resource)).items as Unstructured[];
  } catch (error) {
    if (isApiError(error, 404)) {
      return { kind, installed: false, objects: 0, lines: [], breaking: 0 };
    }
    throw error;
  }
  const lines: string[] = [];
  let breaking = 0;
  for (const item of items) {
    const problems = await refusalsAsNew(crd, {
      ...item,
      apiVersion: `${spec.group}/${resource.version}`,
    });
    if (!problems.length) continue;
    breaking++;
    const meta = item.metadata ?? {};
    const where = meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name;
    for (const problem of problems) lines.push(`${kind} ${where}: ${problem}`);
  }
  return { kind, installed: true, objects: items.length, lines, breaking };
}

/** The summary line for one CRD's findings. */
export function refusalsSummary(found: StoredRefusals): string {
  if (!found.installed) return `${found.kind}: not installed, nothing stored`;
  if (!found.breaking) {
    return `${found.kind}: all ${found.objects} stored object(s) fit this version's rules`;
  }
  return `${found.kind}: ${found.breaking} of ${found.objects} stored object(s) break rules of ` +
    `this version. They keep working, and every update that does not make them worse passes; ` +
    `fix each field named above when you can (an edit toward the rule passes too)`;
}
