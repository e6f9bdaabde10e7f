// Command kubectl is upstream's cmd/kubectl main (k8s.io/kubernetes
// cmd/kubectl), built from k8s.io/kubectl at the control plane's pin: the
// tests ask the real client what `kubectl apply` does with a file (its
// strict field validation, its namespace rules) beside `kubectl sapp plan`.
// A module of its own, not a package of the kube module, so adding it left
// the control plane's cached build (keyed on that module's files) alone.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	// Import to initialize client auth plugins.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) // nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
