#!/usr/bin/env bash
# Prints the path of a cert-manager controller binary of the pinned version, building it once from
# the Go module proxy into a cache outside the clone (keyed by version), with cert-manager's CRDs
# rendered next to it in crds.yaml. Only bench/cert-manager.bench.ts uses it (npm run bench).
#
# Upstream's main is the module github.com/cert-manager/cert-manager/cmd/controller, which the proxy
# does not serve; its go.mod requires the main module through `replace ... => ../../`. So the
# wrapper module here takes that module path (cmd/controller may import the main module's
# internal/ packages), requires the main module at $version from the proxy, and carries the main
# module's own require and replace lines (replace lines of a dependency do not apply to its users).
# Its main is scripts/cert-manager/main.go.
#
#   CERT_MANAGER_VERSION     version to use (default below; github.com/cert-manager/cert-manager releases)
#   ESO_MTLS_TOOLS_CACHE     cache root (default: $HOME/.cache/eso-mtls/tools)
set -euo pipefail
shopt -s inherit_errexit
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/go-tool-cache.sh"
source "$here/go-build-flags.sh"
version="${CERT_MANAGER_VERSION:-v1.21.2}"
module=github.com/cert-manager/cert-manager

# module_dir: where the proxy's copy of cert-manager $version is unpacked in the module cache.
module_dir() {
  go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

build() {
  local src wrapper
  src="$(module_dir)"
  [[ -f "$src/go.mod" ]] || { echo "ensure-cert-manager: $module@$version not in the module cache" >&2; return 1; }
  wrapper="$(dirname "$1")/wrapper"
  mkdir -p "$wrapper"
  cp "$here/cert-manager/main.go" "$wrapper/"
  # Upstream's go.mod under the wrapper's module path, plus the main module itself.
  sed "1s|^module .*|module $module/cmd/controller|" "$src/go.mod" >"$wrapper/go.mod"
  printf '\nrequire %s %s\n' "$module" "$version" >>"$wrapper/go.mod"
  # -mod=mod, not tidy: tidy would also fetch what upstream's tests import.
  (cd "$wrapper" && CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false" go build "${go_tool_flags[@]}" \
      -ldflags "-s -w -X $module/pkg/util.AppVersion=$version" -o "$1" .)
}

# render_crds OUT: the CRDs as the Helm chart of the same module source installs them.
render_crds() {
  local src helm
  src="$(module_dir)"
  helm="$("$here/ensure-helm.sh")"
  "$helm" template cert-manager "$src/deploy/charts/cert-manager" --namespace cert-manager \
    --set crds.enabled=true --show-only 'templates/crd-*.yaml' >"$1.$$.tmp"
  mv -f "$1.$$.tmp" "$1"
}

bin="$(cached_go_tool cert-manager "$version" build)"
crds="$(dirname "$bin")/crds.yaml"
[[ -s "$crds" ]] || render_crds "$crds"
echo "$bin"
