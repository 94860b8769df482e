// Validates an OLM bundle directory (manifests/ + metadata/annotations.yaml) with operator-framework's own
// validators, as `operator-sdk bundle validate` does: one problem per line, exit 1 if any error.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
)

// The validators in validation.DefaultBundleValidators (csv, crd, bundle), then OperatorHub's (the non-deprecated
// split of OperatorHubValidator; it also checks removed Kubernetes APIs, as AlphaDeprecatedAPIsValidator does)
// and the good practices.
var validators = []struct {
	name string
	v    interfaces.Validator
}{
	{"csv", validation.ClusterServiceVersionValidator},
	{"crd", validation.CustomResourceDefinitionValidator},
	{"bundle", validation.BundleValidator},
	{"operatorhub", validation.OperatorHubV2Validator},
	{"standardcapabilities", validation.StandardCapabilitiesValidator},
	{"standardcategories", validation.StandardCategoriesValidator},
	{"good-practices", validation.GoodPracticesValidator},
}

func main() {
	k8sVersion := flag.String("k8s-version", "1.36", "Kubernetes version the bundle targets (validators' k8s-version optional value)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: olm_validate [-k8s-version X.Y] <bundle-dir>\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	dir := flag.Arg(0)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(os.Stderr, "olm_validate: %s is not a readable directory\n", dir)
		os.Exit(2)
	}
	bundle, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "olm_validate: cannot load bundle from %s: %v\n", dir, err)
		os.Exit(2)
	}
	objs := append(bundle.ObjectsToValidate(), map[string]string{"k8s-version": *k8sVersion})

	failed := false
	for _, val := range validators {
		for _, result := range val.v.Validate(objs...) {
			failed = report("ERROR", val.name, result.Errors) || failed
			report("WARNING", val.name, result.Warnings)
		}
	}
	if failed {
		os.Exit(1)
	}
}

func report(level, validator string, problems []errors.Error) bool {
	for _, p := range problems {
		fmt.Printf("%s %s: %s\n", level, validator, message(p))
	}
	return len(problems) > 0
}

// message is p.Error() without its "<Level>: " prefix and without empty values ("Value : ...").
func message(p errors.Error) string {
	var where []string
	if p.Field != "" {
		where = append(where, "Field "+p.Field)
	}
	if v := fmt.Sprint(p.BadValue); p.BadValue != nil && v != "" {
		where = append(where, "Value "+v)
	}
	if len(where) == 0 {
		return p.Detail
	}
	if p.Detail == "" {
		return strings.Join(where, ", ")
	}
	return strings.Join(where, ", ") + ": " + p.Detail
}
