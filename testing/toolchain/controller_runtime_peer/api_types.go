// The two kinds the peer reconciles and creates, declared as kubebuilder's `create api` would:
// Ptemplate (pt.example.com/v1alpha1, the fields of crds/ptemplates.pt.example.com.yaml) and
// the part of KMM's Module (kmm.sigs.x-k8s.io/v1beta1) it writes. KMM's own Go module is not
// served by the Go module proxy, so the Module's fields are declared here; deep copies are
// written by hand where controller-gen would generate them.
package main

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	ptemplateGroupVersion = schema.GroupVersion{Group: "pt.example.com", Version: "v1alpha1"}
	kmmGroupVersion       = schema.GroupVersion{Group: "kmm.sigs.x-k8s.io", Version: "v1beta1"}
)

// addKnownTypes registers both kinds, as the generated AddToScheme functions do.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(ptemplateGroupVersion, &Ptemplate{}, &PtemplateList{})
	metav1.AddToGroupVersion(scheme, ptemplateGroupVersion)
	scheme.AddKnownTypes(kmmGroupVersion, &Module{}, &ModuleList{})
	metav1.AddToGroupVersion(scheme, kmmGroupVersion)
	return nil
}

// PtemplateSpec is what a user asks for; two fields have an older second spelling.
type PtemplateSpec struct {
	Selector        map[string]string            `json:"selector"`
	MaxDev          int64                        `json:"maxdev,omitempty"`
	DefaultMsg      *string                      `json:"defaultmsg,omitempty"`
	ConsumerImage   string                       `json:"consumerimage,omitempty"`
	Consumer        string                       `json:"consumer,omitempty"`
	DevicePlugin    string                       `json:"deviceplugin,omitempty"`
	RequiredDevices int64                        `json:"requiredDevices,omitempty"`
	ImageRepoSecret *corev1.LocalObjectReference `json:"imageRepoSecret,omitempty"`
	ImagePullSecret *corev1.LocalObjectReference `json:"imagePullSecret,omitempty"`
}

// PtemplateStatus names the consumer pods.
type PtemplateStatus struct {
	Consumers []string `json:"consumers,omitempty"`
}

type Ptemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PtemplateSpec   `json:"spec,omitempty"`
	Status            PtemplateStatus `json:"status,omitempty"`
}

type PtemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Ptemplate `json:"items"`
}

// ModuleSpec holds the Module fields the peer sets; KMM's other fields are optional.
type ModuleSpec struct {
	ModuleLoader    ModuleLoaderSpec             `json:"moduleLoader"`
	DevicePlugin    *DevicePluginSpec            `json:"devicePlugin,omitempty"`
	ImageRepoSecret *corev1.LocalObjectReference `json:"imageRepoSecret,omitempty"`
	Selector        map[string]string            `json:"selector"`
}

type ModuleLoaderSpec struct {
	Container ModuleLoaderContainerSpec `json:"container"`
}

type ModuleLoaderContainerSpec struct {
	Modprobe        ModprobeSpec      `json:"modprobe"`
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	KernelMappings  []KernelMapping   `json:"kernelMappings"`
}

type ModprobeSpec struct {
	ModuleName string   `json:"moduleName"`
	Parameters []string `json:"parameters,omitempty"`
}

type KernelMapping struct {
	Regexp         string `json:"regexp"`
	ContainerImage string `json:"containerImage,omitempty"`
}

type DevicePluginSpec struct {
	Container DevicePluginContainerSpec `json:"container"`
}

type DevicePluginContainerSpec struct {
	Image string `json:"image"`
}

// DaemonSetStatus is KMM's progress of one of a Module's DaemonSets.
type DaemonSetStatus struct {
	NodesMatchingSelectorNumber int32 `json:"nodesMatchingSelectorNumber,omitempty"`
	DesiredNumber               int32 `json:"desiredNumber,omitempty"`
	AvailableNumber             int32 `json:"availableNumber,omitempty"`
}

type ModuleStatus struct {
	ModuleLoader DaemonSetStatus  `json:"moduleLoader,omitempty"`
	DevicePlugin *DaemonSetStatus `json:"devicePlugin,omitempty"`
}

type Module struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ModuleSpec   `json:"spec,omitempty"`
	Status            ModuleStatus `json:"status,omitempty"`
}

type ModuleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Module `json:"items"`
}
