/** The `kmm-module` plugin: for each Ptemplate, the KMM Module that loads ptemplate_char_dev on its nodes. */
import { definePlugin, reads, type Stored } from "../mod.ts";
import { MODULE, type Module } from "../crds/kmm_module.ts";
import { effectiveSpec, PTEMPLATE, type Ptemplate } from "../crds/ptemplate.ts";

export const KERNEL_MODULE_NAME = "ptemplate_char_dev";
/** KMM substitutes the node's kernel version; one image per kernel, built ahead. */
export const KERNEL_MODULE_IMAGE = "quay.io/chrisp262/pt-char-dev:${KERNEL_FULL_VERSION}-sb";

/** The Module a Ptemplate wants, named like it, in its namespace. */
export function moduleFor(pt: Stored<Ptemplate, true>): Module {
  const spec = effectiveSpec(pt.spec);
  const parameters = [`max_dev=${spec.maxdev}`];
  if (spec.defaultmsg !== undefined) parameters.push(`default_msg=${spec.defaultmsg}`);
  return {
    apiVersion: "kmm.sigs.x-k8s.io/v1beta1",
    kind: "Module",
    metadata: { name: pt.metadata.name, namespace: pt.metadata.namespace },
    spec: {
      moduleLoader: {
        container: {
          modprobe: { moduleName: KERNEL_MODULE_NAME, parameters },
          imagePullPolicy: "Always",
          kernelMappings: [{ regexp: "^.+$", containerImage: KERNEL_MODULE_IMAGE }],
        },
      },
      devicePlugin: { container: { image: spec.devicePluginImage } },
      ...(spec.pullSecret ? { imageRepoSecret: { name: spec.pullSecret } } : {}),
      selector: { ...spec.selector },
    },
  };
}

export const kmmModulePlugin = definePlugin({
  name: "kmm-module",
  for: PTEMPLATE,
  owns: [MODULE],
  writesStatus: false,
  // The spec; of its Modules nothing but what the runtime compares (their managed fields).
  reads: [reads(PTEMPLATE, ["spec"]), reads(MODULE, [])],
  reconcile(pt, { installed }) {
    // Without KMM's CRD there is nothing to create; the status says so, and the informer calls
    // us again the moment the CRD appears.
    if (!installed(MODULE)) return;
    return { children: [moduleFor(pt)] };
  },
});
