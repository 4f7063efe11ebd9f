#!/usr/bin/env bash
# Prints the path of a cert-manager controller binary of the pinned version, building it once from
# the Go module proxy into a cache outside the clone (keyed by version and variant), with
# cert-manager's CRDs rendered next to it in crds.yaml.
#
#   ensure-cert-manager.sh                  upstream's default controller set, for
#                                           bench/cert-manager.bench.ts (npm run bench)
#   ensure-cert-manager.sh --tests          only the controllers the test suite runs (CA and
#                                           SelfSigned issuers, approver, certificates; see
#                                           scripts/cert-manager/controllers_tests.go), for
#                                           testing/cert-manager (scripts/prepare-test-env.sh)
#   ensure-cert-manager.sh --download-only  [--tests] fetches the Go modules the build needs into
#                                           the module cache, and prints how many; builds nothing,
#                                           and fetches nothing once the binary is cached
#
# Upstream's main is the module github.com/cert-manager/cert-manager/cmd/controller, which the proxy
# does not serve; its go.mod requires the main module through `replace ... => ../../`. So the
# wrapper module here takes that module path (cmd/controller may import the main module's
# internal/ packages), requires the main module at $version from the proxy, and carries the main
# module's own require and replace lines (replace lines of a dependency do not apply to its users).
# Its main is scripts/cert-manager/*.go; the variant is a build tag (tests_only).
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

name=cert-manager
tags=()
download_only=false
for arg in "$@"; do
  case "$arg" in
    --tests) name=cert-manager-tests tags=(-tags tests_only) ;;
    --download-only) download_only=true ;;
    *) echo "ensure-cert-manager: unknown argument '$arg' (--tests, --download-only)" >&2; exit 2 ;;
  esac
done

# module_dir: where the proxy's copy of cert-manager $version is unpacked in the module cache.
module_dir() {
  go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

# wrapper DIR: the wrapper module in DIR (created).
wrapper() {
  local src
  src="$(module_dir)"
  [[ -f "$src/go.mod" ]] || { echo "ensure-cert-manager: $module@$version not in the module cache" >&2; return 1; }
  mkdir -p "$1"
  cp "$here"/cert-manager/*.go "$1/"
  # Upstream's go.mod under the wrapper's module path, plus the main module itself.
  sed "1s|^module .*|module $module/cmd/controller|" "$src/go.mod" >"$1/go.mod"
  printf '\nrequire %s %s\n' "$module" "$version" >>"$1/go.mod"
}

# -mod=mod, not tidy: tidy would also fetch what upstream's tests import (and every ACME DNS
# provider's SDK, which the tests variant does not link).
build() {
  local dir
  dir="$(dirname "$1")/wrapper"
  wrapper "$dir"
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false" go build "${go_tool_flags[@]}" "${tags[@]}" \
      -ldflags "-s -w -X $module/pkg/util.AppVersion=$version" -o "$1" .)
}

# download: the modules of the packages the build links, and no others (go list fetches what it
# must resolve; go mod download would fetch every requirement of upstream's go.mod).
download() {
  local dir count
  dir="$(mktemp -d "${TMPDIR:-/tmp}/eso-mtls-cert-manager.XXXXXX")"
  # shellcheck disable=SC2064 # expand now: dir is local
  trap "rm -rf '$dir'" EXIT
  wrapper "$dir"
  count="$(cd "$dir" && GOFLAGS="-mod=mod -buildvcs=false" go list -deps "${tags[@]}" -f '{{with .Module}}{{.Path}}{{end}}' . | sort -u | wc -l)"
  echo "$count modules for $name $version"
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

if [[ "$download_only" == true ]]; then
  # Resolving the module graph costs seconds of CPU even with every module cached: only when a build is due.
  if [[ -x "${ESO_MTLS_TOOLS_CACHE:-$HOME/.cache/eso-mtls/tools}/$name-$version/$name" ]]; then
    echo "none needed: $name $version is built"
  else
    download
  fi
  exit 0
fi
bin="$(cached_go_tool "$name" "$version" build)"
crds="$(dirname "$bin")/crds.yaml"
[[ -s "$crds" ]] || render_crds "$crds"
echo "$bin"
