#!/usr/bin/env bash
# Prints the path of a usable prometheus, from Debian's 'prometheus' package (installed when missing and we are
# root). The Grafana dashboard tests (a Prometheus server) use it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/debian-tool.sh"
ensure_debian_tool PROMETHEUS prometheus prometheus
