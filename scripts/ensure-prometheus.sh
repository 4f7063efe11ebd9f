#!/usr/bin/env bash
# Prints the path of a usable Prometheus server binary. Debian's `prometheus` package ships it next
# to promtool, so a missing one is installed by scripts/ensure-promtool.sh (which installs that
# package when we are root, with its service kept from starting). The dashboard tests call this,
# so a missing Prometheus fails them loudly instead of skipping them.
set -euo pipefail
cd "$(dirname "$0")/.."

find_prometheus() {
  if [[ -n "${PROMETHEUS:-}" && -x "${PROMETHEUS}" ]]; then echo "${PROMETHEUS}"; return 0; fi
  command -v prometheus 2>/dev/null && return 0
  [[ -x /usr/bin/prometheus ]] && { echo /usr/bin/prometheus; return 0; }
  return 1
}

if find_prometheus; then exit 0; fi
# promtool may come from elsewhere (PROMTOOL=...), so its presence does not mean the server is here.
bash scripts/ensure-promtool.sh >/dev/null
if find_prometheus; then exit 0; fi
echo "prometheus not found. Install Debian's 'prometheus' package (apt-get install --no-install-recommends prometheus)," >&2
echo "or put prometheus on PATH, or set PROMETHEUS=/path/to/prometheus." >&2
exit 1
