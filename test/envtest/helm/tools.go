//go:build tools

// Package tools pins helm's CLI so `go build helm.sh/helm/v3/cmd/helm` builds
// it at the version in go.mod.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
