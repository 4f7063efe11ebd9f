#!/usr/bin/env bash
# Installs or builds what the test suite needs beyond npm packages, reusing caches outside the
# clone: kube-apiserver + etcd, kustomize, helm, kubectl and zlint (built from the Go module proxy), the Prometheus operator's CRDs (its Go module), promtool and the Prometheus server (Debian's prometheus) and chromium (Debian's, for the chart tests).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x testing/envtest/build-testbin.sh ] || [ -f testing/envtest/build-testbin.sh ]; then
  echo "test env: kube-apiserver and etcd in $(bash testing/envtest/build-testbin.sh)" >&2
fi
if [ -f scripts/ensure-kustomize.sh ]; then
  echo "test env: kustomize at $(bash scripts/ensure-kustomize.sh)" >&2
fi
if [ -f scripts/ensure-promtool.sh ]; then
  echo "test env: promtool at $(bash scripts/ensure-promtool.sh)" >&2
fi
if [ -f scripts/ensure-prometheus.sh ]; then
  echo "test env: prometheus at $(bash scripts/ensure-prometheus.sh)" >&2
fi
if [ -f scripts/ensure-chromium.sh ]; then
  echo "test env: chromium at $(bash scripts/ensure-chromium.sh)" >&2
fi
if [ -f scripts/ensure-helm.sh ]; then
  echo "test env: helm at $(bash scripts/ensure-helm.sh), Prometheus operator CRDs in $(bash scripts/ensure-prometheus-crds.sh)" >&2
fi
if [ -f scripts/ensure-kubectl.sh ]; then
  echo "test env: kubectl at $(bash scripts/ensure-kubectl.sh)" >&2
fi
if [ -f scripts/ensure-zlint.sh ]; then
  echo "test env: zlint at $(bash scripts/ensure-zlint.sh)" >&2
fi
