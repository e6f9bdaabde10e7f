#!/usr/bin/env bash
# Builds the control-plane binaries (kube-apiserver, etcd, helm) from the Go
# wrapper modules beside this script, once: each binary is cached outside the
# repo under a key made of its module's files and the Go version, so a second
# run reuses it and a changed pin rebuilds only what changed.
# Prints a directory holding exactly `kube-apiserver`, `etcd` and `helm`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${SERVERLESSAPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/serverlessapp-operator}/envtest
export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0

die() { echo "envtest: $*" >&2; exit 3; }
command -v go >/dev/null || die "Go is not installed; install Go >= 1.25 (the machine image has it at /usr/local/go/bin) and put it on PATH."
gover=$(go env GOVERSION)
mkdir -p "$cache" || die "cannot create the cache directory $cache"

# key MODULE [LDFLAGS]: the cache key of one wrapper module's build.
key() {
  (cd "$here/$1" && cat go.mod go.sum *.go; echo "$gover ${2:-}") | sha256sum | cut -c1-16
}

# build MODULE PACKAGE BINARY [LDFLAGS]: builds $cache/MODULE-<key>/BINARY unless present.
build() {
  local module=$1 pkg=$2 binary=$3 ldflags=${4:-}
  local out; out="$cache/$module-$(key "$module" "$ldflags")"
  [ -x "$out/$binary" ] && return 0
  local avail; avail=$(df -Pk "$cache" | awk 'NR==2 {print $4}')
  [ "${avail:-0}" -gt 3000000 ] || die "less than 3 GB free under $cache; the Go build needs about 3 GB (modules and build cache). Free some disk and retry."
  echo "envtest: building $binary with $gover (first run only; cached in $out)" >&2
  local tmp; tmp=$(mktemp -d "$cache/.build-$module.XXXXXX")
  if ! (cd "$here/$module" && go build -trimpath -tags notest,grpcnotrace -ldflags "-s -w $ldflags" -o "$tmp/$binary" "$pkg") 2>"$tmp/build.log"; then
    tail -n 20 "$tmp/build.log" >&2
    grep -qiE 'dial tcp|proxy|no such host|i/o timeout|403|404' "$tmp/build.log" \
      && die "could not download Go modules for $binary; check that the Go module proxy is reachable (go env GOPROXY)."
    die "building $binary failed (log above)."
  fi
  rm -rf "$out"; mkdir -p "$out"; mv "$tmp/$binary" "$out/$binary"; rm -rf "$tmp"
}

exec 9>"$cache/.lock"; flock 9   # two runs at once build once
k8s=$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3} $1=="k8s.io/kubernetes" {print $2}' "$here/apiserver/go.mod" | head -n1)
minor=$(echo "$k8s" | cut -d. -f2)
k8s_ldflags="-X k8s.io/component-base/version.gitVersion=$k8s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"

build etcd . etcd &
etcd_pid=$!
build apiserver . kube-apiserver "$k8s_ldflags"
wait $etcd_pid
build helm helm.sh/helm/v3/cmd/helm helm

# One bin dir per combination of builds, so checkouts with different pins never
# swap each other's binaries mid-run.
apiserver_dir="$cache/apiserver-$(key apiserver "$k8s_ldflags")"
etcd_dir="$cache/etcd-$(key etcd)"
helm_dir="$cache/helm-$(key helm)"
bin="$cache/bin-$(echo "$apiserver_dir $etcd_dir $helm_dir" | sha256sum | cut -c1-16)"
if [ ! -d "$bin" ]; then
  tmp=$(mktemp -d "$cache/.bin.XXXXXX"); chmod 755 "$tmp"
  ln -s "$apiserver_dir/kube-apiserver" "$tmp/kube-apiserver"
  ln -s "$etcd_dir/etcd" "$tmp/etcd"
  ln -s "$helm_dir/helm" "$tmp/helm"
  mv -T "$tmp" "$bin"
fi
echo "$bin"
