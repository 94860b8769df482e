// The Ptemplate reconciler: for each Ptemplate a KMM Module and a consumer DaemonSet, both
// controlled by it, made when missing and corrected when they drift from the spec, and a status
// that names the consumer pods. Reads come from the manager's cache, as kubebuilder scaffolds.
package main

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	kernelModuleName   = "ptemplate_char_dev"
	kernelModuleImage  = "quay.io/chrisp262/pt-char-dev:${KERNEL_FULL_VERSION}-sb"
	defaultConsumer    = "quay.io/chrisp262/pt-device-plugin:consumer-latest"
	defaultPlugin      = "quay.io/chrisp262/pt-device-plugin:plugin-latest"
	deviceResource     = corev1.ResourceName("example.com/ptemplate")
	ptemplateUIDLabel  = "pt.example.com/ptemplate-uid"
	defaultMaxDev      = 5
	defaultRequiredDev = 1
)

// PtemplateReconciler reconciles Ptemplates.
type PtemplateReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

//+kubebuilder:rbac:groups=pt.example.com,resources=ptemplates,verbs=get;list;watch
//+kubebuilder:rbac:groups=pt.example.com,resources=ptemplates/status,verbs=get;update;patch
//+kubebuilder:rbac:groups=kmm.sigs.x-k8s.io,resources=modules,verbs=get;list;watch;create;update
//+kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch;create;update
//+kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

func (r *PtemplateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pt Ptemplate
	if err := r.Get(ctx, req.NamespacedName, &pt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pt.DeletionTimestamp.IsZero() {
		// Owner references hand the children to the garbage collector.
		return ctrl.Result{}, nil
	}
	if err := r.reconcileModule(ctx, &pt); err != nil {
		return ctrl.Result{}, fmt.Errorf("module: %w", err)
	}
	if err := r.reconcileDaemonSet(ctx, &pt); err != nil {
		return ctrl.Result{}, fmt.Errorf("daemonset: %w", err)
	}
	return ctrl.Result{}, r.reconcileStatus(ctx, &pt)
}

func (r *PtemplateReconciler) reconcileModule(ctx context.Context, pt *Ptemplate) error {
	want := moduleFor(pt)
	var have Module
	err := r.Get(ctx, client.ObjectKeyFromObject(want), &have)
	if apierrors.IsNotFound(err) {
		if err := ctrl.SetControllerReference(pt, want, r.Scheme); err != nil {
			return err
		}
		return r.Create(ctx, want)
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(&have, pt) {
		return fmt.Errorf("Module %s exists and is not controlled by this Ptemplate", want.Name)
	}
	if equality.Semantic.DeepEqual(have.Spec, want.Spec) {
		return nil
	}
	have.Spec = want.Spec
	return r.Update(ctx, &have)
}

func (r *PtemplateReconciler) reconcileDaemonSet(ctx context.Context, pt *Ptemplate) error {
	want := daemonSetFor(pt)
	var have appsv1.DaemonSet
	err := r.Get(ctx, client.ObjectKeyFromObject(want), &have)
	if apierrors.IsNotFound(err) {
		if err := ctrl.SetControllerReference(pt, want, r.Scheme); err != nil {
			return err
		}
		return r.Create(ctx, want)
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(&have, pt) {
		return fmt.Errorf("DaemonSet %s exists and is not controlled by this Ptemplate", want.Name)
	}
	// The API server fills in defaults, so compare what we set, field by field.
	haveSpec, wantSpec := &have.Spec.Template.Spec, &want.Spec.Template.Spec
	if len(haveSpec.Containers) == 1 &&
		haveSpec.Containers[0].Image == wantSpec.Containers[0].Image &&
		haveSpec.Containers[0].Resources.Limits[deviceResource].Equal(
			wantSpec.Containers[0].Resources.Limits[deviceResource]) &&
		equality.Semantic.DeepEqual(haveSpec.NodeSelector, wantSpec.NodeSelector) &&
		equality.Semantic.DeepEqual(haveSpec.ImagePullSecrets, wantSpec.ImagePullSecrets) {
		return nil
	}
	have.Spec.Template.Spec.Containers = wantSpec.Containers
	have.Spec.Template.Spec.NodeSelector = wantSpec.NodeSelector
	have.Spec.Template.Spec.ImagePullSecrets = wantSpec.ImagePullSecrets
	return r.Update(ctx, &have)
}

func (r *PtemplateReconciler) reconcileStatus(ctx context.Context, pt *Ptemplate) error {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(pt.Namespace),
		client.MatchingLabels{ptemplateUIDLabel: string(pt.UID)}); err != nil {
		return err
	}
	var consumers []string
	for _, pod := range pods.Items {
		consumers = append(consumers, pod.Name)
	}
	sort.Strings(consumers)
	if equality.Semantic.DeepEqual(consumers, pt.Status.Consumers) {
		return nil
	}
	patch := client.MergeFrom(pt.DeepCopy())
	pt.Status.Consumers = consumers
	return r.Status().Patch(ctx, pt, patch)
}

type effectiveSpec struct {
	maxDev, requiredDevices int64
	defaultMsg              *string
	consumerImage, plugin   string
	pullSecret              *corev1.LocalObjectReference
}

// effective resolves the two spellings (the API server refuses both at once) and the defaults.
func effective(spec PtemplateSpec) effectiveSpec {
	e := effectiveSpec{
		maxDev: spec.MaxDev, requiredDevices: spec.RequiredDevices, defaultMsg: spec.DefaultMsg,
		consumerImage: spec.ConsumerImage, plugin: spec.DevicePlugin, pullSecret: spec.ImageRepoSecret,
	}
	if e.maxDev == 0 {
		e.maxDev = defaultMaxDev
	}
	if e.requiredDevices == 0 {
		e.requiredDevices = defaultRequiredDev
	}
	if e.consumerImage == "" {
		e.consumerImage = spec.Consumer
	}
	if e.consumerImage == "" {
		e.consumerImage = defaultConsumer
	}
	if e.plugin == "" {
		e.plugin = defaultPlugin
	}
	if e.pullSecret == nil {
		e.pullSecret = spec.ImagePullSecret
	}
	return e
}

func moduleFor(pt *Ptemplate) *Module {
	spec := effective(pt.Spec)
	parameters := []string{fmt.Sprintf("max_dev=%d", spec.maxDev)}
	if spec.defaultMsg != nil {
		parameters = append(parameters, "default_msg="+*spec.defaultMsg)
	}
	return &Module{
		ObjectMeta: metav1.ObjectMeta{Name: pt.Name, Namespace: pt.Namespace},
		Spec: ModuleSpec{
			ModuleLoader: ModuleLoaderSpec{Container: ModuleLoaderContainerSpec{
				Modprobe:        ModprobeSpec{ModuleName: kernelModuleName, Parameters: parameters},
				ImagePullPolicy: corev1.PullAlways,
				KernelMappings:  []KernelMapping{{Regexp: "^.+$", ContainerImage: kernelModuleImage}},
			}},
			DevicePlugin:    &DevicePluginSpec{Container: DevicePluginContainerSpec{Image: spec.plugin}},
			ImageRepoSecret: copySecret(spec.pullSecret),
			Selector:        copyLabels(pt.Spec.Selector),
		},
	}
}

func daemonSetFor(pt *Ptemplate) *appsv1.DaemonSet {
	spec := effective(pt.Spec)
	selector := map[string]string{ptemplateUIDLabel: string(pt.UID)}
	podLabels := map[string]string{"app": pt.Name, ptemplateUIDLabel: string(pt.UID)}
	var pullSecrets []corev1.LocalObjectReference
	if spec.pullSecret != nil {
		pullSecrets = []corev1.LocalObjectReference{*spec.pullSecret}
	}
	privileged := true
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: pt.Name + "-consumer", Namespace: pt.Namespace, Labels: map[string]string{"app": pt.Name},
		},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					NodeSelector:     copyLabels(pt.Spec.Selector),
					ImagePullSecrets: pullSecrets,
					Containers: []corev1.Container{{
						Name:            "consumer",
						Image:           spec.consumerImage,
						ImagePullPolicy: corev1.PullAlways,
						SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
							deviceResource: *resource.NewQuantity(spec.requiredDevices, resource.DecimalSI),
						}},
						VolumeMounts: []corev1.VolumeMount{{Name: "hostdev", MountPath: "/hostdev"}},
					}},
					Volumes: []corev1.Volume{{
						Name:         "hostdev",
						VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/dev"}},
					}},
				},
			},
		},
	}
}

// ptemplateOfPod maps a consumer pod to the Ptemplate whose UID its label carries (by the `app`
// label beside it): its status names the pod.
func ptemplateOfPod(_ context.Context, pod client.Object) []reconcile.Request {
	labels := pod.GetLabels()
	if labels[ptemplateUIDLabel] == "" || labels["app"] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{
		Namespace: pod.GetNamespace(), Name: labels["app"],
	}}}
}

// SetupWithManager watches Ptemplates, the children they own and the consumer pods.
func (r *PtemplateReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&Ptemplate{}).
		Owns(&Module{}).
		Owns(&appsv1.DaemonSet{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(ptemplateOfPod)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}
