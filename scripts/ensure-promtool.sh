#!/usr/bin/env bash
# Prints the path of a usable promtool, installing Debian's `prometheus` package when we are root.
# The alert-rule tests call this, so a missing promtool fails them loudly instead of skipping them.
set -euo pipefail

find_promtool() {
  if [[ -n "${PROMTOOL:-}" && -x "${PROMTOOL}" ]]; then echo "${PROMTOOL}"; return 0; fi
  command -v promtool 2>/dev/null && return 0
  [[ -x /usr/bin/promtool ]] && { echo /usr/bin/promtool; return 0; }
  return 1
}

if find_promtool; then exit 0; fi

if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "promtool not found. Install Debian's 'prometheus' package (apt-get install --no-install-recommends prometheus)," >&2
  echo "or put promtool on PATH, or set PROMTOOL=/path/to/promtool." >&2
  exit 1
fi

# Only the promtool binary is wanted: keep the package's service from being started (the
# standard policy-rc.d convention; exit 101 = action forbidden), unless the host already has a policy.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [[ ! -e "$policy" ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1
fi
cleanup() { if [[ "$own_policy" == 1 ]]; then rm -f "$policy"; fi; }
trap cleanup EXIT

{
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus
} >&2

if find_promtool; then exit 0; fi
echo "installed the 'prometheus' package but promtool is still not on PATH" >&2
exit 1
