#!/usr/bin/env bash
# Prints the path of a usable promtool, from Debian's 'prometheus' package (installed when missing and we are
# root). The alert-rule tests use it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/debian-tool.sh"
ensure_debian_tool PROMTOOL promtool prometheus
