#!/usr/bin/env bash
# Sourced by the ensure-<tool>.sh scripts of tools the tests take from Debian's packages:
#   ensure_debian_tool ENV_VAR BINARY PACKAGE
# prints the path of BINARY ($ENV_VAR if set and executable, else PATH, else /usr/bin), installing
# PACKAGE when it is missing and we are root with apt-get. The tests call these scripts, so a missing
# tool fails them loudly instead of skipping them.

find_debian_tool() {
  local override="${!1:-}"
  if [[ -n "$override" && -x "$override" ]]; then echo "$override"; return 0; fi
  command -v "$2" 2>/dev/null && return 0
  [[ -x "/usr/bin/$2" ]] && { echo "/usr/bin/$2"; return 0; }
  return 1
}

ensure_debian_tool() {
  local var="$1" binary="$2" package="$3"
  if find_debian_tool "$var" "$binary"; then return 0; fi
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "$binary not found. Install Debian's '$package' package (apt-get install --no-install-recommends $package)," >&2
    echo "or put $binary on PATH, or set $var=/path/to/$binary." >&2
    return 1
  fi
  # Only the binaries are wanted: keep a package's service from being started (the standard
  # policy-rc.d convention; exit 101 = action forbidden), unless the host already has a policy.
  local policy=/usr/sbin/policy-rc.d own_policy=0 status=0
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1
  fi
  {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package"
  } >&2 || status=$?
  if [[ "$own_policy" == 1 ]]; then rm -f "$policy"; fi
  if [[ "$status" != 0 ]]; then
    echo "apt-get install $package failed (exit $status)" >&2
    return 1
  fi
  if find_debian_tool "$var" "$binary"; then return 0; fi
  echo "installed the '$package' package but $binary is still not on PATH" >&2
  return 1
}
