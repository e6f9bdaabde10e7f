// Command istio-analyze runs `istioctl analyze`'s analyzers (all of them, from
// the istio.io/istio module istiod is built from) over a running cluster, as
// `istioctl analyze --all-namespaces` does, plus the YAML files given as
// arguments, read as if they were written to it (files take precedence over
// the cluster, as in istioctl). Prints the messages as istioctl's
// `-o json` does (diag.Message's JSON), on stdout.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"istio.io/istio/pkg/config/analysis/analyzers"
	"istio.io/istio/pkg/config/analysis/local"
	"istio.io/istio/pkg/config/resource"
	"istio.io/istio/pkg/kube"
	"istio.io/istio/pkg/log"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the cluster's kubeconfig")
	istioNamespace := flag.String("istio-namespace", "istio-system", "where istiod runs")
	flag.Parse()
	// Istio's log writes to stdout by default, where the JSON goes.
	logOpts := log.DefaultOptions()
	logOpts.OutputPaths = []string{"stderr"}
	logOpts.SetDefaultOutputLevel(log.OverrideScopeName, log.WarnLevel)
	if err := log.Configure(logOpts); err != nil {
		fail("logging: %v", err)
	}

	client, err := kube.NewCLIClient(kube.BuildClientCmd(*kubeconfig, ""))
	if err != nil {
		fail("client: %v", err)
	}
	// Namespace "" is every namespace, as --all-namespaces.
	sa := local.NewIstiodAnalyzer(analyzers.AllCombined(), "", resource.Namespace(*istioNamespace), nil)
	sa.AddRunningKubeSourceWithRevision(kube.EnableCrdWatcher(client), "", false)
	readers := make([]local.ReaderSource, 0, flag.NArg())
	for _, f := range flag.Args() {
		r, err := os.Open(f)
		if err != nil {
			fail("%v", err)
		}
		readers = append(readers, local.ReaderSource{Name: f, Reader: r})
	}
	if len(readers) > 0 {
		if err := sa.AddReaderKubeSource(readers); err != nil {
			fail("reading %v: %v", flag.Args(), err)
		}
	}
	cancel := make(chan struct{})
	result, err := sa.Analyze(cancel)
	if err != nil {
		fail("analyze: %v", err)
	}
	// Each message as its own MarshalJSON writes it (code, level, message, origin), as in istioctl's -o json.
	if err := json.NewEncoder(os.Stdout).Encode(result.Messages); err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "istio-analyze: "+format+"\n", args...)
	os.Exit(1)
}
