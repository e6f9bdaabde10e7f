#!/usr/bin/env bash
# Builds the test rig's binaries from the Go wrapper modules beside this
# script, once: the control plane (kube-apiserver, kube-controller-manager,
# kube-scheduler, etcd), KWOK's simulated nodes, the real Knative Serving
# (controller, webhook, autoscaler) and, with ENVTEST_NETGW=on, its Gateway API
# network ingress (net-gateway-api's controller), KServe's controller, its local model
# cache controller and node agent and its LLMInferenceService manager, kubectl, istiod (Istio's pilot-discovery) with xds-dump
# and istio-analyze, helm, and the GitOps judges (kstatus, gopher-lua). Each
# module's binaries are cached outside the repo under a key made of the
# module's files and the Go version, so a second run reuses them and a changed
# pin rebuilds only that module.
# Prints a directory holding all of them (names in BINARIES below).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${SERVERLESSAPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/serverlessapp-operator}/envtest
export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0

die() { echo "envtest: $*" >&2; exit 3; }
command -v go >/dev/null || die "Go is not installed; install Go >= 1.26 (the machine image has it at /usr/local/go/bin) and put it on PATH."
gover=$(go env GOVERSION)
mkdir -p "$cache" || die "cannot create the cache directory $cache"

# key MODULE [LDFLAGS]: the cache key of one wrapper module's build.
key() {
  (cd "$here/$1" && find . -name 'go.mod' -o -name 'go.sum' -o -name '*.go' | LC_ALL=C sort | xargs cat; echo "$gover ${2:-}") | sha256sum | cut -c1-16
}

# build MODULE LDFLAGS NAME=PACKAGE...: builds each PACKAGE of MODULE into
# $cache/MODULE-<key>/NAME unless all are present there already.
build() {
  local module=$1 ldflags=$2; shift 2
  local out; out="$cache/$module-$(key "$module" "$ldflags")"
  local spec missing=0
  for spec in "$@"; do [ -x "$out/${spec%%=*}" ] || missing=1; done
  [ $missing = 0 ] && return 0
  local avail; avail=$(df -Pk "$cache" | awk 'NR==2 {print $4}')
  [ "${avail:-0}" -gt 4000000 ] || die "less than 4 GB free under $cache; the Go builds need about 4 GB (modules and build cache). Free some disk and retry."
  echo "envtest: building $module ($(for s in "$@"; do printf '%s ' "${s%%=*}"; done)) with $gover (first run only; cached in $out)" >&2
  local tmp; tmp=$(mktemp -d "$cache/.build-$module.XXXXXX")
  local pkgs=(); for spec in "$@"; do pkgs+=("${spec#*=}"); done
  if ! (cd "$here/$module" && go build -trimpath -tags notest,grpcnotrace -ldflags "-s -w $ldflags" -o "$tmp/" "${pkgs[@]}") 2>"$tmp/build.log"; then
    tail -n 20 "$tmp/build.log" >&2
    grep -qiE 'dial tcp|proxy|no such host|i/o timeout|403|404' "$tmp/build.log" \
      && die "could not download Go modules for $module; check that the Go module proxy is reachable (go env GOPROXY)."
    die "building $module failed (log above)."
  fi
  # go build -o DIR/ names each binary after its package's last path element
  # (for ".", the wrapper module's own path).
  local modpath; modpath=$(awk '$1=="module" {print $2}' "$here/$module/go.mod")
  for spec in "$@"; do
    local pkg=${spec#*=}; [ "$pkg" = . ] && pkg=$modpath
    mv "$tmp/$(basename "$pkg")" "$tmp/${spec%%=*}.bin"
  done
  rm -rf "$out"; mkdir -p "$out"
  for spec in "$@"; do mv "$tmp/${spec%%=*}.bin" "$out/${spec%%=*}"; done
  rm -rf "$tmp"
}

exec 9>"$cache/.lock"; flock 9   # two runs at once build once
k8s=$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3} $1=="k8s.io/kubernetes" {print $2}' "$here/kube/go.mod" | head -n1)
minor=$(echo "$k8s" | cut -d. -f2)
k8s_ldflags="-X k8s.io/component-base/version.gitVersion=$k8s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"

# etcd is small: it builds beside the control plane; the rest one module at a
# time, so each go build has both cores.
build etcd '' etcd=. &
etcd_pid=$!
build kube "$k8s_ldflags" kube-apiserver=./cmd/kube-apiserver kube-controller-manager=./cmd/kube-controller-manager kube-scheduler=./cmd/kube-scheduler
wait $etcd_pid
# kubectl, at the control plane's pin, from a wrapper module of its own: its
# packages (cli-runtime, kustomize) are not the kube module's, and a module of
# its own keeps the control plane's cache key (and cached build) as it is. Most
# of what it compiles (client-go, apimachinery) is in Go's build cache by now.
build kubectl "$k8s_ldflags" kubectl=.
build kwok '' kwok=sigs.k8s.io/kwok/cmd/kwok
build knative '' knative-controller=knative.dev/serving/cmd/controller knative-webhook=knative.dev/serving/cmd/webhook knative-autoscaler=knative.dev/serving/cmd/autoscaler
# Knative's network ingress (net-gateway-api), only with ENVTEST_NETGW=on (the
# rig's opt-in, dataplane.ts): the same knative.dev/pkg and networking as
# Serving's pin, so most of its packages come from Serving's build.
netgw=${ENVTEST_NETGW:-off}
[ "$netgw" != on ] || build netgw '' net-gateway-api-controller=.
# The manager, KServe's local model cache (its controller and the node agent
# the localmodel chart runs as a DaemonSet) and the LLMInferenceService manager
# (llmisvc, with its webhooks) share one module and build cache.
build kserve '' kserve-manager=github.com/kserve/kserve/cmd/manager kserve-localmodel=github.com/kserve/kserve/cmd/localmodel \
  kserve-localmodelnode=github.com/kserve/kserve/cmd/localmodelnode kserve-llmisvc=github.com/kserve/kserve/cmd/llmisvc
# Helm's own Makefile stamps the Kubernetes version `helm template` assumes
# (and checks a chart's kubeVersion against) from its client-go, v0.N -> 1.N;
# without it a source build assumes v1.20 and refuses charts that need newer.
helm_minor=$(awk '$1=="k8s.io/client-go" {print $2}' "$here/helm/go.mod" | cut -d. -f2)
helm_ldflags=$(for p in chartutil lint/rules; do printf -- '-X helm.sh/helm/v3/pkg/%s.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/%s.k8sVersionMinor=%s ' "$p" "$p" "$helm_minor"; done)
build helm "$helm_ldflags" helm=helm.sh/helm/v3/cmd/helm
# The GitOps tools' judges (kstatus and Argo CD's Lua VM, gitops/main.go), which
# the integration suite asks what Flux and Argo CD conclude from a status.
build gitops '' gitops-judge=.
# istiod: the largest (~16 CPU-minutes, once), so last. ENVTEST_ISTIO=off skips
# it (and the rig then runs without istiod, dataplane.ts). xds-dump (the proxy
# configuration istiod sends, test/support/envoy-config.ts) and istio-analyze
# (istioctl analyze's analyzers, test/support/istio-analyze.ts) share its module
# and build cache: about a minute more, istiod's packages reused.
istio=${ENVTEST_ISTIO:-on}
[ "$istio" = off ] || build istio '' pilot-discovery=. xds-dump=./cmd/xds-dump istio-analyze=./cmd/istio-analyze

# One bin dir per combination of builds, so checkouts with different pins never
# swap each other's binaries mid-run.
dirs=("kube-$(key kube "$k8s_ldflags")" "kubectl-$(key kubectl "$k8s_ldflags")" "etcd-$(key etcd)" "kwok-$(key kwok)" "knative-$(key knative)" "kserve-$(key kserve)" "helm-$(key helm "$helm_ldflags")" "gitops-$(key gitops)")
[ "$netgw" != on ] || dirs+=("netgw-$(key netgw)")
[ "$istio" = off ] || dirs+=("istio-$(key istio)")
bin="$cache/bin-$(echo "${dirs[*]}" | sha256sum | cut -c1-16)"
if [ ! -d "$bin" ]; then
  tmp=$(mktemp -d "$cache/.bin.XXXXXX"); chmod 755 "$tmp"
  for d in "${dirs[@]}"; do for f in "$cache/$d"/*; do ln -s "$f" "$tmp/$(basename "$f")"; done; done
  mv -T "$tmp" "$bin"
fi
echo "$bin"
