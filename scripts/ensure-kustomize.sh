#!/usr/bin/env bash
# Prints the path of a kustomize binary of the pinned version, building it once from the Go module
# proxy into a cache outside the clone (keyed by version) when it is not there yet.
# (v5.8.1: the newest release that builds with Go 1.26; v5.8.2+ ask for Go 1.27.)
#
#   KUSTOMIZE_VERSION        version to use (default below)
#   ESO_MTLS_TOOLS_CACHE     cache root (default: $HOME/.cache/eso-mtls/tools)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/go-tool-cache.sh"
source "$(dirname "${BASH_SOURCE[0]}")/go-build-flags.sh"
version="${KUSTOMIZE_VERSION:-v5.8.1}"
build() {
  CGO_ENABLED=0 GOBIN="$(dirname "$1")" GOFLAGS=-buildvcs=false go install "${go_tool_flags[@]}" -ldflags "-s -w" "sigs.k8s.io/kustomize/kustomize/v5@$version"
}
cached_go_tool kustomize "$version" build
