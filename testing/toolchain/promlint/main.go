// Lints Prometheus metrics in the text exposition format read from stdin, the way
// `promtool check metrics` does (client_golang's promlint): one problem per line, exit 1 if any.
package main

import (
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

func main() {
	problems, err := promlint.New(os.Stdin).Lint()
	if err != nil {
		fmt.Fprintf(os.Stderr, "not valid Prometheus text format: %v\n", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Printf("%s: %s\n", p.Metric, p.Text)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}
