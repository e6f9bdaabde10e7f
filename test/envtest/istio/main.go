// Command pilot-discovery is istiod, built from the pinned istio.io/istio
// module (see go.mod) for the test rig, as Istio's own Dockerfile builds it
// from pilot/cmd/pilot-discovery.
package main

import (
	"os"

	"istio.io/istio/pilot/cmd/pilot-discovery/app"
	"istio.io/istio/pkg/log"
)

func main() {
	log.EnableKlogWithCobra()
	rootCmd := app.NewRootCommand()
	if err := rootCmd.Execute(); err != nil {
		log.Error(err)
		os.Exit(-1)
	}
}
