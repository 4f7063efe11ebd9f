#!/usr/bin/env bash
# Prints the path of a folder holding the Prometheus operator's ServiceMonitor, PodMonitor and
# PrometheusRule CRDs at a pinned version, taken once from the operator's Go module source
# (example/prometheus-operator-crd/) through the Go module proxy, and cached outside the clone,
# keyed by version. The chart tests apply them so the chart's optional monitoring objects can be installed.
#
#   PROMETHEUS_OPERATOR_VERSION   module version (default below: the newest the proxy served in November 2026)
#   ESO_MTLS_TOOLS_CACHE          cache root (default: $HOME/.cache/eso-mtls/tools)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/go-tool-cache.sh"
version="${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}"
module=github.com/prometheus-operator/prometheus-operator
# The cache's one-entry layout serves a folder as well as a binary: OUT becomes the folder.
fetch() {
  local out="$1" dir
  dir="$(cd "$(dirname "$out")" && go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -n "$dir" && -d "$dir/example/prometheus-operator-crd" ]] || { echo "ensure-prometheus-crds: $module@$version has no example/prometheus-operator-crd" >&2; return 1; }
  mkdir -p "$out"
  for kind in servicemonitors podmonitors prometheusrules; do
    cp "$dir/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" "$out/"
  done
  chmod -R u+w "$out"
}
cached_go_tool prometheus-operator-crds "$version" fetch
