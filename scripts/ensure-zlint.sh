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
root="${ESO_MTLS_TOOLS_CACHE:-$HOME/.cache/eso-mtls/tools}"
dir="$root/zlint-$version"
bin="$dir/zlint"
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi
command -v go >/dev/null 2>&1 ||
  { echo "ensure-zlint: 'go' not found; install Go (https://go.dev/dl) to build zlint $version, or put zlint at $bin" >&2; exit 1; }
mkdir -p "$root"
exec 9>"$dir.lock"
flock 9 2>/dev/null || true
if [[ -x "$bin" ]]; then echo "$bin"; exit 0; fi
tmp="$(mktemp -d "$root/.zlint.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "ensure-zlint: building github.com/zmap/zlint/v3/cmd/zlint@$version (once)" >&2
start=$SECONDS
(cd "$here" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" \
  go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$tmp/zlint" github.com/zmap/zlint/v3/cmd/zlint) >&2
mkdir -p "$dir"
mv -f "$tmp/zlint" "$bin"
echo "ensure-zlint: built in $((SECONDS - start))s" >&2
echo "$bin"
