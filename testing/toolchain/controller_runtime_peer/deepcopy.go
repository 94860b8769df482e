// Deep copies of the peer's kinds, the methods controller-gen's object generator writes: the
// cache hands every reader its own copy.
package main

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func copyStrings(in []string) []string {
	if in == nil {
		return nil
	}
	return append([]string(nil), in...)
}

func copyLabels(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func copySecret(in *corev1.LocalObjectReference) *corev1.LocalObjectReference {
	if in == nil {
		return nil
	}
	out := *in
	return &out
}

func (in *PtemplateSpec) DeepCopyInto(out *PtemplateSpec) {
	*out = *in
	out.Selector = copyLabels(in.Selector)
	if in.DefaultMsg != nil {
		msg := *in.DefaultMsg
		out.DefaultMsg = &msg
	}
	out.ImageRepoSecret = copySecret(in.ImageRepoSecret)
	out.ImagePullSecret = copySecret(in.ImagePullSecret)
}

func (in *Ptemplate) DeepCopyInto(out *Ptemplate) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	out.Status.Consumers = copyStrings(in.Status.Consumers)
}

func (in *Ptemplate) DeepCopy() *Ptemplate {
	if in == nil {
		return nil
	}
	out := new(Ptemplate)
	in.DeepCopyInto(out)
	return out
}

func (in *Ptemplate) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *PtemplateList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := &PtemplateList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Ptemplate, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

func (in *ModuleSpec) DeepCopyInto(out *ModuleSpec) {
	*out = *in
	out.ModuleLoader.Container.Modprobe.Parameters =
		copyStrings(in.ModuleLoader.Container.Modprobe.Parameters)
	if in.ModuleLoader.Container.KernelMappings != nil {
		out.ModuleLoader.Container.KernelMappings =
			append([]KernelMapping(nil), in.ModuleLoader.Container.KernelMappings...)
	}
	if in.DevicePlugin != nil {
		plugin := *in.DevicePlugin
		out.DevicePlugin = &plugin
	}
	out.ImageRepoSecret = copySecret(in.ImageRepoSecret)
	out.Selector = copyLabels(in.Selector)
}

func (in *Module) DeepCopyInto(out *Module) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	if in.Status.DevicePlugin != nil {
		status := *in.Status.DevicePlugin
		out.Status.DevicePlugin = &status
	}
}

func (in *Module) DeepCopy() *Module {
	if in == nil {
		return nil
	}
	out := new(Module)
	in.DeepCopyInto(out)
	return out
}

func (in *Module) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *ModuleList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := &ModuleList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Module, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
