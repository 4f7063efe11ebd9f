#!/usr/bin/env bash
# Installs or builds what the test suite needs beyond npm packages, reusing caches outside the clone:
#   built from the Go module proxy into ~/.cache/eso-mtls/: kube-apiserver + etcd, kustomize, helm,
#     kubectl and zlint, and the Prometheus operator's CRDs (copied from its Go module);
#   from Debian's packages, when missing and we are root: promtool and the Prometheus server
#     (`prometheus`), a headless browser (`chromium`) for the chart tests, and SoftHSM2 (`softhsm2`) with
#     the pkcs11js binding for the HSM tests;
#   for the real node: kubelet, kube-controller-manager, kube-scheduler, kube-proxy, containerd and
#     CoreDNS from the Go module proxy (testing/node/build-node-bins.sh, ~25 minutes cold), with
#     Debian's runc, CNI plugins, iptables and conntrack;
#   with buildah and debootstrap (Debian's) and the npm registry: the images the real-node suite runs,
#     on local stand-ins for their base images (scripts/ensure-images.sh, docs/images.md).
# Each step prints where its tool is; a step that cannot provide its tool fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

# Runs one script and prints where its tool is; a failing script fails the run (a command
# substitution inside echo's arguments would not).
step() {
  local where
  where="$(bash "$2")"
  echo "test env: $1 $where" >&2
}

step "kube-apiserver and etcd in" testing/envtest/build-testbin.sh
step "kustomize at" scripts/ensure-kustomize.sh
step "helm at" scripts/ensure-helm.sh
step "Prometheus operator CRDs in" scripts/ensure-prometheus-crds.sh
step "kubectl at" scripts/ensure-kubectl.sh
step "zlint at" scripts/ensure-zlint.sh
step "promtool at" scripts/ensure-promtool.sh
step "prometheus at" scripts/ensure-prometheus.sh
step "libfaketime at" scripts/ensure-faketime.sh
step "chromium at" scripts/ensure-chromium.sh
step "SoftHSM2 at" scripts/ensure-softhsm.sh
step "the real node's Debian tools:" scripts/ensure-node-packages.sh
step "kubelet, kube-controller-manager, kube-scheduler, kube-proxy, containerd and CoreDNS in" testing/node/build-node-bins.sh
step "images (tarballs and manifest.json) in" scripts/ensure-images.sh
