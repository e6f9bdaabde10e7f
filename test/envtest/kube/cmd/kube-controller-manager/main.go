// Command kube-controller-manager is upstream's cmd/kube-controller-manager
// main, built from the same k8s.io/kubernetes module as kube-apiserver: the
// garbage collector, Deployments, ReplicaSets and EndpointSlices of the test rig.
package main

import (
	"os"

	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() { os.Exit(cli.Run(app.NewControllerManagerCommand())) }
