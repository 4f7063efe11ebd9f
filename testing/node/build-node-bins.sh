#!/usr/bin/env bash
# Builds (once, cached outside the clone) what a real node needs beyond kube-apiserver and etcd:
#   kubelet, kube-controller-manager, kube-scheduler and kube-proxy in ONE go build (they share
#   compilation), containerd v2 with ctr and the runc shim, and CoreDNS with only the plugins the
#   node's Corefile uses (coredns/main.go: half the packages of CoreDNS's own main), from the
#   wrapper modules next to this script. Prints ONLY the folder that holds them on stdout; progress
#   goes to stderr.
#
#   ESO_MTLS_NODE_BINS        reuse an existing folder holding all of them
#   ESO_MTLS_KUBE_NODE_CACHE  cache root (default: $HOME/.cache/eso-mtls/kube-node); not
#                             ESO_MTLS_NODE_CACHE, which is the Node releases' (scripts/node-cache.mjs)
#   GO                        go command to use (default: go on PATH)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../scripts/go-build-flags.sh"
log() { printf 'build-node-bins: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
bins=(kubelet kube-controller-manager kube-scheduler kube-proxy containerd ctr containerd-shim-runc-v2 coredns)
have_bins() { local b; for b in "${bins[@]}"; do [[ -x "$1/$b" ]] || return 1; done; }

if [[ -n "${ESO_MTLS_NODE_BINS:-}" ]]; then
  have_bins "$ESO_MTLS_NODE_BINS" || die "ESO_MTLS_NODE_BINS=$ESO_MTLS_NODE_BINS lacks one of: ${bins[*]}"
  (cd "$ESO_MTLS_NODE_BINS" && pwd)
  exit 0
fi

modver() { awk -v m="$2" '($1 == m) || ($1 == "require" && $2 == m) { print ($1 == m ? $2 : $3); exit }' "$1"; }
k8s_ver="$(modver "$here/kubernetes/go.mod" k8s.io/kubernetes)"
containerd_ver="$(modver "$here/containerd/go.mod" github.com/containerd/containerd/v2)"
coredns_ver="$(modver "$here/coredns/go.mod" github.com/coredns/coredns)"
[[ "$k8s_ver" =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || die "cannot read k8s.io/kubernetes version from kubernetes/go.mod"
k8s_minor="${BASH_REMATCH[1]}"
[[ -n "$containerd_ver" && -n "$coredns_ver" ]] || die "cannot read the containerd or CoreDNS version from their go.mod"

cache_root="${ESO_MTLS_KUBE_NODE_CACHE:-$HOME/.cache/eso-mtls/kube-node}"
# The CoreDNS build carries only the plugins its main.go imports: a change to that set is a new build.
coredns_plugins="$(sha256sum "$here/coredns/main.go" | cut -c1-8)"
dir="$cache_root/k8s-${k8s_ver}_containerd-${containerd_ver}_coredns-${coredns_ver}-${coredns_plugins}"
if have_bins "$dir"; then echo "$dir"; exit 0; fi

go_cmd="${GO:-go}"
command -v "$go_cmd" >/dev/null 2>&1 || die "'go' not found: building the node needs Go (https://go.dev/dl), or set ESO_MTLS_NODE_BINS to a folder holding ${bins[*]}"

mkdir -p "$cache_root"
exec 9>"$dir.lock"
if ! flock -n 9; then
  log "another build of $(basename "$dir") is running; waiting for it"
  flock 9
fi
if have_bins "$dir"; then echo "$dir"; exit 0; fi

rm -rf "$cache_root/.build.${dir##*/}."*   # leftovers of a killed build (we hold the lock)
tmp="$(mktemp -d "$cache_root/.build.${dir##*/}.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
start=$SECONDS
vpkg=k8s.io/component-base/version
log "building kubelet, kube-controller-manager, kube-scheduler and kube-proxy ${k8s_ver} in one go build (cold: 15-30 minutes on 2 cores)"
(cd "$here/kubernetes" && "$go_cmd" build "${go_tool_flags[@]}" \
  -ldflags "-s -w -X $vpkg.gitVersion=${k8s_ver} -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=${k8s_minor} -X $vpkg.gitTreeState=clean" \
  -o "$tmp/" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy) >&2
log "building containerd ${containerd_ver}, ctr and containerd-shim-runc-v2"
(cd "$here/containerd" && "$go_cmd" build "${go_tool_flags[@]}" -tags "no_btrfs no_devmapper no_zfs" \
  -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=${containerd_ver}" \
  -o "$tmp/" github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2) >&2
log "building CoreDNS ${coredns_ver}"
(cd "$here/coredns" && "$go_cmd" build "${go_tool_flags[@]}" -ldflags "-s -w" -o "$tmp/coredns" .) >&2

mkdir -p "$dir"
for b in "${bins[@]}"; do mv -f "$tmp/$b" "$dir/$b"; done
log "built in $((SECONDS - start))s"
echo "$dir"
