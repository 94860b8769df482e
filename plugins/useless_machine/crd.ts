/** The useless machine's kinds (useless.container.training/v1alpha1): `Machine` and `Switch`. */
import {
  customResourceDefinition,
  type KubeObject,
  type Resource,
  type Unstructured,
} from "../../mod.ts";
import type { MachineSpec, MachineStatus } from "./machine_types.ts";
import type { SwitchSpec, SwitchStatus } from "./switch_types.ts";

export const MACHINE: Resource<Machine, true> = {
  group: "useless.container.training",
  version: "v1alpha1",
  kind: "Machine",
  plural: "machines",
  namespaced: true,
};

export const SWITCH: Resource<Switch, true> = {
  group: "useless.container.training",
  version: "v1alpha1",
  kind: "Switch",
  plural: "switches",
  namespaced: true,
};

/** The label that ties a switch to its machine. */
export const MACHINE_LABEL = "machine";

// Their spec and status types are generated from the schemas below (`deno task crds`).
export interface Machine extends KubeObject {
  spec: MachineSpec;
  status?: MachineStatus;
}

export interface Switch extends KubeObject {
  spec: SwitchSpec;
  status?: SwitchStatus;
}

export const MACHINE_CRD: Unstructured = customResourceDefinition(MACHINE, {
  columns: [
    { name: "Switches", type: "integer", jsonPath: ".spec.switches" },
    { name: "Positions", type: "string", jsonPath: ".status.positions" },
  ],
  spec: {
    type: "object",
    required: ["switches"],
    properties: {
      switches: {
        type: "integer",
        minimum: 1,
        maximum: 64,
        description: "How many switches the machine has (at least 1).",
      },
    },
  },
  status: {
    positions: {
      type: "string",
      description: "First letter of each switch's position, in creation order.",
    },
    lastFlip: {
      type: "string",
      format: "date-time",
      description: "When the machine last flipped a switch.",
    },
  },
});

export const SWITCH_CRD: Unstructured = customResourceDefinition(SWITCH, {
  columns: [
    { name: "Position", type: "string", jsonPath: ".spec.position" },
    { name: "Seen", type: "date", jsonPath: ".status.seenAt" },
  ],
  spec: {
    type: "object",
    required: ["position"],
    properties: { position: { type: "string", enum: ["up", "down"], description: "up or down." } },
  },
  status: {
    seenAt: {
      type: "string",
      format: "date-time",
      description: "When the machine first saw this switch up.",
    },
  },
});
