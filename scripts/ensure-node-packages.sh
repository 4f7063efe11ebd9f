#!/usr/bin/env bash
# Prints where the real node's tools from Debian's packages are, installing any that is missing
# when we are root: buildah and debootstrap (the images), runc (the OCI runtime), the CNI plugins
# (the pod network), iptables and conntrack (kube-proxy), all used inside the node's namespaces only.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/debian-tool.sh"

# The CNI plugins are not on PATH: look for the bridge plugin where Debian puts it.
export ESO_MTLS_CNI_BRIDGE="${ESO_MTLS_CNI_BRIDGE:-/usr/lib/cni/bridge}"
found=()
for tool in "BUILDAH buildah buildah" "DEBOOTSTRAP debootstrap debootstrap" "RUNC runc runc" \
  "ESO_MTLS_CNI_BRIDGE bridge containernetworking-plugins" "IPTABLES iptables iptables" "CONNTRACK conntrack conntrack"; do
  read -r var binary package <<<"$tool"
  found+=("$(ensure_debian_tool "$var" "$binary" "$package")")
done
echo "${found[*]}"
