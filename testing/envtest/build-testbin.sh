#!/usr/bin/env bash
# Build (once, cached outside the clone) real kube-apiserver and etcd binaries
# from the wrapper modules next to this script. Prints ONLY the directory that
# holds them on stdout (usable as KUBEBUILDER_ASSETS); progress goes to stderr.
#
#   KUBEBUILDER_ASSETS      reuse an existing dir holding kube-apiserver + etcd
#   ESO_MTLS_TESTBIN_CACHE  cache root (default: $HOME/.cache/eso-mtls/testbin)
#   GO                      go command to use (default: go on PATH)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../scripts/go-build-flags.sh"
# The Go modules to build: this folder (the version npm test runs on) or ESO_MTLS_TESTBIN_MODULES,
# a folder with kube-apiserver/ and etcd/ of its own (testing/envtest/compat: the oldest version we claim).
modules="${ESO_MTLS_TESTBIN_MODULES:-$here}"
log() { printf 'build-testbin: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
have_bins() { [[ -x "$1/kube-apiserver" && -x "$1/etcd" ]]; }

# (a) Binaries supplied by the caller.
if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  if have_bins "$KUBEBUILDER_ASSETS"; then
    (cd "$KUBEBUILDER_ASSETS" && pwd)
    exit 0
  fi
  log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks executable kube-apiserver and etcd; ignoring it"
fi

# (b) Cache keyed by the versions pinned in the wrapper modules.
modver() { awk -v m="$2" '($1 == m) || ($1 == "require" && $2 == m) { print ($1 == m ? $2 : $3); exit }' "$1"; }
k8s_ver="$(modver "$modules/kube-apiserver/go.mod" k8s.io/kubernetes)"
etcd_ver="$(modver "$modules/etcd/go.mod" go.etcd.io/etcd/server/v3)"
[[ "$k8s_ver" =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || die "cannot read k8s.io/kubernetes version from kube-apiserver/go.mod"
k8s_minor="${BASH_REMATCH[1]}"
[[ -n "$etcd_ver" ]] || die "cannot read go.etcd.io/etcd/server/v3 version from etcd/go.mod"

cache_root="${ESO_MTLS_TESTBIN_CACHE:-$HOME/.cache/eso-mtls/testbin}"
dir="$cache_root/k8s-${k8s_ver}_etcd-${etcd_ver}"
if have_bins "$dir"; then
  echo "$dir"
  exit 0
fi

# (c) A Go toolchain is needed for the one-off build.
go_cmd="${GO:-go}"
req_go="$(awk '$1 == "go" { print $2 }' "$modules/kube-apiserver/go.mod" "$modules/etcd/go.mod" | sort -V | tail -n1)"
command -v "$go_cmd" >/dev/null 2>&1 ||
  die "'go' not found. Building kube-apiserver/etcd needs Go >= ${req_go} (https://go.dev/dl, or Debian's golang package from a release that ships it). Or set KUBEBUILDER_ASSETS to a dir holding kube-apiserver and etcd."
have_go="$("$go_cmd" env GOVERSION)"; have_go="${have_go#go}"
if [[ "$(printf '%s\n%s\n' "$req_go" "$have_go" | sort -V | head -n1)" != "$req_go" &&
      "$("$go_cmd" env GOTOOLCHAIN)" == local ]]; then
  die "Go ${have_go} is too old: need Go >= ${req_go} (https://go.dev/dl), or set GOTOOLCHAIN=auto to let go fetch it."
fi

# (d) Build under a lock, into a temp dir on the same filesystem, then rename.
mkdir -p "$cache_root"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$dir.lock"
  if ! flock -n 9; then
    log "another build of $(basename "$dir") is running; waiting for it"
    flock 9
  fi
  if have_bins "$dir"; then echo "$dir"; exit 0; fi
else
  log "flock not found; building without a lock"
fi

rm -rf "$cache_root/.build.${dir##*/}."*   # leftovers of a killed build (we hold the lock)
tmp="$(mktemp -d "$cache_root/.build.${dir##*/}.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
start=$SECONDS
log "building etcd ${etcd_ver} (Go ${have_go})"
(cd "$modules/etcd" && "$go_cmd" build "${go_tool_flags[@]}" -ldflags "-s -w" \
  -o "$tmp/etcd" go.etcd.io/etcd/server/v3) >&2
log "building kube-apiserver ${k8s_ver} (cold: 10-20+ minutes on 2 cores)"
vpkg=k8s.io/component-base/version
(cd "$modules/kube-apiserver" && "$go_cmd" build "${go_tool_flags[@]}" \
  -ldflags "-s -w -X $vpkg.gitVersion=${k8s_ver} -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=${k8s_minor} -X $vpkg.gitTreeState=clean" \
  -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver) >&2

mkdir -p "$dir"
mv -f "$tmp/etcd" "$dir/etcd"
mv -f "$tmp/kube-apiserver" "$dir/kube-apiserver"
log "built in $((SECONDS - start))s"
echo "$dir"
