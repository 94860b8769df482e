/**
 * What a quarantined object says about it: a Warning Event, and (where its plugin writes status) a
 * `ReconcileQuarantined` condition, applied under a field manager of its own
 * (the plugin's, with `-quarantine`) so that it sits beside the plugin's own conditions (a list keyed by
 * type) and goes when the key is visited again successfully.
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import type { EventRecorder, Logger } from "../observe/mod.ts";
import type { Plugin } from "../plugin/mod.ts";
import { fieldManagerOf, type OperatorIdentity } from "../identity/mod.ts";

/** The condition's type. */
export const QUARANTINE_CONDITION = "ReconcileQuarantined";

/** What the condition and the Event need. */
export interface QuarantineNotice {
  /** Writes the condition, with the plugin's field manager and `-quarantine`. */
  client: KubeClient;
  /** Records the Warning Event on the object. */
  events: EventRecorder;
  /** Where a condition that could not be written is told. */
  log: Logger;
  /** The plugin whose key was put aside: its kind and name. */
  plugin: Plugin;
  /** Whose runtime writes it (the field manager is the plugin's, with `-quarantine`). */
  operator: OperatorIdentity;
}

/** The field manager of the condition. */
function manager(notice: QuarantineNotice): string {
  return `${fieldManagerOf(notice.operator, notice.plugin.name)}-quarantine`;
}

/** Says that `object` is put aside after `timeouts` visits past their deadline, and why. */
export async function reportQuarantine(
  notice: QuarantineNotice,
  object: KubeObject,
  why: { timeouts: number; error: string },
): Promise<void> {
  const { plugin } = notice;
  const message = `plugin ${plugin.name} is not visiting this object again until it changes: ` +
    `its last ${why.timeouts} reconciles ${why.error}; fix the plugin or the spec (an edit ` +
    `releases it)`;
  notice.events.record(object, { type: "Warning", reason: QUARANTINE_CONDITION, message });
  if (plugin.writesStatus === false) return;
  await applyCondition(notice, object, [{
    type: QUARANTINE_CONDITION,
    status: "True",
    reason: "ReconcileTimeouts",
    message,
    lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
    observedGeneration: object.metadata?.generation,
  }]);
}

/** Takes the condition off `object` (a visit worked again). */
export async function clearQuarantine(notice: QuarantineNotice, object: KubeObject): Promise<void> {
  if (notice.plugin.writesStatus === false) return;
  await applyCondition(notice, object, []);
}

async function applyCondition(
  notice: QuarantineNotice,
  object: KubeObject,
  conditions: Record<string, unknown>[],
): Promise<void> {
  const meta = object.metadata ?? {};
  try {
    await notice.client.apply(notice.plugin.for, {
      apiVersion: object.apiVersion,
      kind: object.kind,
      metadata: { name: meta.name, namespace: meta.namespace, uid: meta.uid },
      status: { conditions },
    } as KubeObject, { subresource: "status", fieldManager: manager(notice), force: true });
  } catch (error) {
    // A kind whose status has no conditions list: the Event says it.
    notice.log.warn("could not write the {condition} condition of {object}: {error}", {
      condition: QUARANTINE_CONDITION,
      object: `${meta.namespace ?? ""}/${meta.name}`,
      error,
    });
  }
}
