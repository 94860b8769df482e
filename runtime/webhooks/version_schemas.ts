/**
 * The schema of each version of the CRDs the webhooks serve, and where an object does not fit the
 * one of its version: its shape always, its bounds when asked, and for an update only what it adds
 * to the stored object's problems.
 */
import type { OpenApiSchema } from "../../kube/custom_resource_definition.ts";
import type { Unstructured } from "../../kube/object.ts";
import { addedProblems } from "./change_judgement.ts";
import { objectProblems } from "./schema_check.ts";

/** The CRDs' version schemas, by `group/version kind` (the first CRD to name one wins). */
export class VersionSchemas {
  readonly #schemas = new Map<string, OpenApiSchema>();

  /** Reads the schema of every version each CRD serves. */
  constructor(crds: Unstructured[]) {
    for (const crd of crds) {
      const spec = crd.spec as {
        group: string;
        names: { kind: string };
        versions: { name: string; schema?: { openAPIV3Schema: OpenApiSchema } }[];
      };
      for (const version of spec.versions) {
        const key = `${spec.group}/${version.name} ${spec.names.kind}`;
        if (version.schema && !this.#schemas.has(key)) {
          this.#schemas.set(key, version.schema.openAPIV3Schema);
        }
      }
    }
  }

  /**
   * Where `object` does not fit the schema of `kind` as `apiVersion` (its shape, and with
   * `bounds` its bounds too; with `old`, only what it adds to the stored object's problems), in
   * words; undefined when it fits or no CRD of the group names the kind. A version the kind is
   * not served as is a problem.
   */
  problems(
    object: Unstructured,
    apiVersion: string,
    kind: string,
    bounds: boolean,
    old?: Unstructured,
  ): string | undefined {
    const schema = this.#schemas.get(`${apiVersion} ${kind}`);
    if (!schema) {
      const served = [...this.#schemas.keys()].some((k) =>
        k.endsWith(` ${kind}`) &&
        k.startsWith(`${apiVersion.split("/")[0]}/`)
      );
      return served ? `${kind} is not served as ${apiVersion}` : undefined;
    }
    let problems = objectProblems(object, schema, { bounds });
    // Judged as a change: what the stored object already had is not held against an update.
    if (old && problems.length) problems = addedProblems(problems, objectProblems(old, schema));
    return problems.length ? problems.join("; ") : undefined;
  }
}
