# Sourced by the ensure-*.sh scripts: the one way a Go tool is built once into the cache outside
# the clone, keyed by version, under a lock so two test runs never build it twice.
#
#   ESO_MTLS_TOOLS_CACHE     cache root (default: $HOME/.cache/eso-mtls/tools)

# cached_go_tool NAME VERSION BUILD-FUNCTION: prints the binary's path, calling BUILD-FUNCTION OUT
# (which must leave the binary at OUT) the first time only.
cached_go_tool() {
  local name="$1" version="$2" build="$3"
  local root="${ESO_MTLS_TOOLS_CACHE:-$HOME/.cache/eso-mtls/tools}"
  local dir="$root/$name-$version"
  local bin="$dir/$name"
  if [[ -x "$bin" ]]; then echo "$bin"; return 0; fi
  command -v go >/dev/null 2>&1 ||
    { echo "ensure-$name: 'go' not found; install Go (https://go.dev/dl) to build $name $version, or put $name at $bin" >&2; return 1; }
  mkdir -p "$root"
  exec 9>"$dir.lock"
  flock 9 2>/dev/null || true
  if [[ -x "$bin" ]]; then echo "$bin"; return 0; fi
  local tmp
  tmp="$(mktemp -d "$root/.$name.XXXXXX")"
  # shellcheck disable=SC2064 # expand now: tmp is local
  trap "rm -rf '$tmp'" EXIT
  echo "ensure-$name: building $name $version (once)" >&2
  local start=$SECONDS
  "$build" "$tmp/$name" >&2
  mkdir -p "$dir"
  mv -f "$tmp/$name" "$bin"
  echo "ensure-$name: built in $((SECONDS - start))s" >&2
  echo "$bin"
}
