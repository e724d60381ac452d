#!/bin/sh
# Builds the Kubernetes control plane the kubernetes tier runs against:
# kube-apiserver (k8s.io/kubernetes) and etcd (go.etcd.io/etcd/server/v3, the
# version kube-apiserver's own go.mod pins) in ONE `go build`, from the Go
# module proxy. kubectl comes from Debian (kubernetes-client): building it
# too would add kustomize & co. to the build for no gain in what we test.
#
# Cached under $KUBE_CACHE/$KUBE_VERSION/bin; a second run is a no-op. The Go
# module and build caches stay at Go's defaults so a fresh clone on the same
# machine (CI) reuses them and only links.
set -eu
KUBE_VERSION=${KUBE_VERSION:-v1.34.2}
STAGING_VERSION=${STAGING_VERSION:-v0.${KUBE_VERSION#v1.}}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KUBE_CACHE=${KUBE_CACHE:-$ROOT/.cache/kubernetes}
OUT=$KUBE_CACHE/$KUBE_VERSION
BIN=$OUT/bin

# One build at a time: CI starts one early, beside the other tiers (.ci/run),
# and `make test` reaches this again; the second waits, then finds it cached.
mkdir -p "$KUBE_CACHE"
exec 9>"$KUBE_CACHE/.build.lock"
flock 9
if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/etcd" ]; then
    echo "build-control-plane: cached in $BIN"
    exit 0
fi
command -v go >/dev/null || { echo "build-control-plane: go is missing" >&2; exit 1; }
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
start=$(date +%s)
SRC=$OUT/src
mkdir -p "$SRC" "$BIN"
cd "$SRC"
# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
# with ./staging/src/...; those replaces do not apply to a dependency, so the
# wrapper module pins each staging module to its published tag.
go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" > kubernetes.json
gomod=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p' kubernetes.json)
{
    echo "module netcfg.test/kube-control-plane"
    echo
    echo "go 1.24"
    echo
    sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/.*#\1#p' "$gomod" |
        sort -u | while read -r m; do echo "replace $m => $m $STAGING_VERSION"; done
} > go.mod
etcd_version=$(sed -n 's#^[[:space:]]*go\.etcd\.io/etcd/client/v3 \(v[^ ]*\).*#\1#p' "$gomod" | head -n1)
go get "k8s.io/kubernetes/cmd/kube-apiserver@$KUBE_VERSION" "go.etcd.io/etcd/server/v3@$etcd_version"
# One build for both mains; -p 2 matches the machine (2 cores).
go build -p 2 -trimpath -o "$BIN/" \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION" \
    k8s.io/kubernetes/cmd/kube-apiserver go.etcd.io/etcd/server/v3
# A module path ending in /v3 names its binary after the element before it.
mv "$BIN/server" "$BIN/etcd"
echo "build-control-plane: kube-apiserver $KUBE_VERSION and etcd $etcd_version in $BIN ($(( $(date +%s) - start )) s)"
