#!/usr/bin/env bash
# Prints the path of a kubectl binary matching the envtest kube-apiserver's minor version, building it
# once from the Go module proxy (wrapper module scripts/kubectl/) into a cache outside the clone.
# docs/getting-started.md uses it for readers without a kubectl of their own, and its test runs it.
#
#   ESO_MTLS_TOOLS_CACHE     cache root (default: $HOME/.cache/eso-mtls/tools)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/go-tool-cache.sh"
source "$here/go-build-flags.sh"
# k8s.io/kubectl v0.Y.Z is kubectl v1.Y.Z.
minor_ver="$(awk '$1 == "k8s.io/kubectl" { print $2; exit }' "$here/kubectl/go.mod")"
[[ "$minor_ver" =~ ^v0\.([0-9]+\.[0-9]+)$ ]] || { echo "ensure-kubectl: cannot read the k8s.io/kubectl version from $here/kubectl/go.mod" >&2; exit 1; }
version="v1.${BASH_REMATCH[1]}"
build() {
  local vpkg=k8s.io/component-base/version minor="${version#v1.}"
  (cd "$here/kubectl" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build "${go_tool_flags[@]}" \
    -ldflags "-s -w -X $vpkg.gitVersion=$version -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=${minor%%.*} -X $vpkg.gitTreeState=clean" \
    -o "$1" .)
}
cached_go_tool kubectl "$version" build
