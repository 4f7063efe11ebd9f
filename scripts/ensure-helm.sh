#!/usr/bin/env bash
# Prints the path of a helm binary of the pinned version, building it once from the Go module proxy
# into a cache outside the clone (keyed by version) when it is not there yet. The chart tests
# (testing/helm/) run this; so does scripts/prepare-test-env.sh.
#
#   HELM_VERSION             version to use (default below; helm.sh/helm/v3 releases only)
#   ESO_MTLS_TOOLS_CACHE     cache root (default: $HOME/.cache/eso-mtls/tools)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/go-tool-cache.sh"
source "$(dirname "${BASH_SOURCE[0]}")/go-build-flags.sh"
version="${HELM_VERSION:-v3.22.0}"
build() {
  # Stamp what helm's own Makefile stamps: its version (else `helm version` says v3.x-dev), and the
  # Kubernetes version of the client-go it builds with, which `helm template` and `helm lint` assume
  # offline (else v1.20, and a chart asking for kubeVersion >= 1.30 fails to render).
  local gomod client_go major minor
  gomod="$(go mod download -json "helm.sh/helm/v3@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  client_go="$(sed -n 's/^[[:space:]]*k8s.io\/client-go v\([0-9.]*\).*/\1/p' "$gomod" | head -1)"
  [[ -n "$client_go" ]] || { echo "ensure-helm: no k8s.io/client-go version in $gomod" >&2; return 1; }
  major=$(( ${client_go%%.*} + 1 ))
  minor="$(echo "$client_go" | cut -d. -f2)"
  local x=()
  for pkg in pkg/lint/rules pkg/chartutil; do
    x+=(-X "helm.sh/helm/v3/$pkg.k8sVersionMajor=$major" -X "helm.sh/helm/v3/$pkg.k8sVersionMinor=$minor")
  done
  CGO_ENABLED=0 GOBIN="$(dirname "$1")" GOFLAGS=-buildvcs=false go install "${go_tool_flags[@]}" \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$version -X helm.sh/helm/v3/internal/version.gitTreeState=clean ${x[*]}" \
    "helm.sh/helm/v3/cmd/helm@$version"
}
cached_go_tool helm "$version" build
