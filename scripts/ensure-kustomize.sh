#!/usr/bin/env bash
# Prints the path of a kustomize binary of the pinned version, building it once from the Go module
# proxy into a cache outside the clone (keyed by version) when it is not there yet.
# (v5.8.1: the newest release that builds with Go 1.26; v5.8.2+ ask for Go 1.27.)
#
#   KUSTOMIZE_VERSION        version to use (default below)
#   ESO_MTLS_TOOLS_CACHE     cache root (default: $HOME/.cache/eso-mtls/tools)
set -euo pipefail
version="${KUSTOMIZE_VERSION:-v5.8.1}"
root="${ESO_MTLS_TOOLS_CACHE:-$HOME/.cache/eso-mtls/tools}"
dir="$root/kustomize-$version"
bin="$dir/kustomize"
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi
command -v go >/dev/null 2>&1 ||
  { echo "ensure-kustomize: 'go' not found; install Go (https://go.dev/dl) to build kustomize $version, or put kustomize at $bin" >&2; exit 1; }
mkdir -p "$root"
exec 9>"$dir.lock"
flock 9 2>/dev/null || true
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi
tmp="$(mktemp -d "$root/.kustomize.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "ensure-kustomize: building sigs.k8s.io/kustomize/kustomize/v5@$version (once)" >&2
CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS=-buildvcs=false go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kustomize/kustomize/v5@$version" >&2
mkdir -p "$dir"
mv -f "$tmp/kustomize" "$bin"
echo "$bin"
