#!/usr/bin/env bash
# Prints the path of a zlint binary of the version pinned in testing/zlint/go.mod, building it once
# from the Go module proxy into a cache outside the clone (keyed by version) when it is not there yet.
# A wrapper module is needed: zlint v3.7.3 asks for a publicsuffix-go pseudo-version the proxy
# refuses, so `go install ...@v3.7.3` fails; the wrapper's replace line pins one it serves.
#
#   ZLINT                    use this zlint binary instead (checked to be executable)
#   ESO_MTLS_TOOLS_CACHE     cache root (default: $HOME/.cache/eso-mtls/tools)
set -euo pipefail
if [[ -n "${ZLINT:-}" ]]; then
  [[ -x "$ZLINT" ]] || { echo "ensure-zlint: ZLINT=$ZLINT is not an executable file; unset it or point it at a zlint binary" >&2; exit 1; }
  echo "$ZLINT"; exit 0
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../testing/zlint" && pwd)"
version="$(awk '($1 == "github.com/zmap/zlint/v3") { print $2; exit }' "$here/go.mod")"
[[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  { echo "ensure-zlint: cannot read the github.com/zmap/zlint/v3 version from $here/go.mod (got '$version')" >&2; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/go-tool-cache.sh"
source "$(dirname "${BASH_SOURCE[0]}")/go-build-flags.sh"
build() {
  (cd "$here" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" \
    go build "${go_tool_flags[@]}" -ldflags "-s -w -X main.version=$version" -o "$1" github.com/zmap/zlint/v3/cmd/zlint)
}
cached_go_tool zlint "$version" build
