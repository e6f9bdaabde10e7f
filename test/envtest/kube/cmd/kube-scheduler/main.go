// Command kube-scheduler is upstream's cmd/kube-scheduler main, built from the
// same k8s.io/kubernetes module as kube-apiserver: it places the rig's pods on
// KWOK's simulated nodes.
package main

import (
	"os"

	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() { os.Exit(cli.Run(app.NewSchedulerCommand())) }
