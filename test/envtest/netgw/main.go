// Command net-gateway-api-controller is Knative's Gateway API network ingress
// (knative.dev/net-gateway-api, pinned in go.mod to the release of the rig's
// Knative Serving: v0.48 = Knative 1.21): its cmd/controller/main.go,
// sharedmain.Main with ingress.NewController, with one change for the rig.
// The health-probe server sharedmain starts on a fixed :8080
// (knative.dev/pkg injection.HealthCheckDefaultPort) is off: the rig runs this
// controller in the network namespace where Knative Serving's controller
// already holds 8080, and only a kubelet would call it.
package main

import (
	"knative.dev/net-gateway-api/pkg/reconciler/ingress"
	"knative.dev/pkg/injection/sharedmain"
	"knative.dev/pkg/signals"
)

func main() {
	ctx := sharedmain.WithHealthProbesDisabled(signals.NewContext())
	sharedmain.MainWithContext(ctx, "net-gateway-api-controller", ingress.NewController)
}
