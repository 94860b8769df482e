/** KMM's `Module` kind (kmm.sigs.x-k8s.io/v1beta1): its address and the fields we use. KMM owns its CRD. */
import type { KubeObject, Resource } from "../mod.ts";

export const MODULE: Resource<Module, true> = {
  group: "kmm.sigs.x-k8s.io",
  version: "v1beta1",
  kind: "Module",
  plural: "modules",
  namespaced: true,
};

/** KMM's CRD, vendored from KMM v2.6.0 for tests and the local demo. */
export const KMM_MODULE_CRD_FILE = new URL("./kmm.sigs.x-k8s.io_modules.yaml", import.meta.url);

/** KMM's per-part progress counters. */
/** KMM's own label on the pods of its module loader and device plugin DaemonSets. */
export const KMM_MODULE_LABEL = "kmm.node.kubernetes.io/module.name";
/** KMM's role label: `module-loader` or `device-plugin`. */
export const KMM_ROLE_LABEL = "kmm.node.kubernetes.io/role";

export interface ModuleCounts {
  nodesMatchingSelectorNumber?: number;
  desiredNumber?: number;
  availableNumber?: number;
}

export interface Module extends KubeObject {
  spec: {
    moduleLoader: {
      container: {
        modprobe: { moduleName: string; parameters?: string[] };
        imagePullPolicy?: string;
        kernelMappings: { regexp?: string; literal?: string; containerImage: string }[];
      };
    };
    devicePlugin?: { container: { image: string; imagePullPolicy?: string } };
    imageRepoSecret?: { name: string };
    selector: Record<string, string>;
  };
  status?: { moduleLoader?: ModuleCounts; devicePlugin?: ModuleCounts };
}
