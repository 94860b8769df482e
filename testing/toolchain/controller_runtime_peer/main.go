// The peer's command line, as kubebuilder scaffolds main.go, with the client's rate limit and
// the number of workers as flags (defaults: controller-runtime's 20 a second, burst 30, and one).
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func main() {
	var metricsAddr, probeAddr string
	var qps float64
	var burst, workers int
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "where /metrics listens; 0 for nowhere")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "where the probes listen; 0 for nowhere")
	flag.Float64Var(&qps, "kube-api-qps", 20, "requests per second to the API server, sustained")
	flag.IntVar(&burst, "kube-api-burst", 30, "requests that may go at once after a quiet spell")
	flag.IntVar(&workers, "max-concurrent-reconciles", 1, "Ptemplates reconciled at once")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setupLog := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(addKnownTypes(scheme))

	config := ctrl.GetConfigOrDie()
	config.QPS = float32(qps)
	config.Burst = burst
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                 scheme,
		MetricsBindAddress:     metricsAddr,
		HealthProbeBindAddress: probeAddr,
	})
	if err != nil {
		setupLog.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	reconciler := &PtemplateReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
	if err := reconciler.SetupWithManager(mgr, workers); err != nil {
		setupLog.Error(err, "unable to create the controller")
		os.Exit(1)
	}
	setupLog.Info("starting manager", "qps", qps, "burst", burst, "workers", workers)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "manager stopped")
		os.Exit(1)
	}
}
