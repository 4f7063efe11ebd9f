#!/usr/bin/env bash
# Installs or builds what the test suite needs beyond npm packages, reusing caches outside the clone:
#   built from the Go module proxy into ~/.cache/eso-mtls/: kube-apiserver + etcd, kustomize, helm,
#     kubectl, zlint and cert-manager's controller (its tests build, with its CRDs), and the
#     Prometheus operator's CRDs (copied from its Go module);
#   from Debian's packages, when missing and we are root: promtool and the Prometheus server
#     (`prometheus`), a headless browser (`chromium`) for the chart tests, and SoftHSM2 (`softhsm2`) with
#     the pkcs11js binding for the HSM tests;
#   for the real node: kubelet, kube-controller-manager, kube-scheduler, kube-proxy, containerd and
#     CoreDNS from the Go module proxy (testing/node/build-node-bins.sh), with Debian's runc, CNI
#     plugins, iptables and conntrack;
#   with buildah and debootstrap (Debian's) and the npm registry: the images the real-node suite runs,
#     on local stand-ins for their base images (scripts/ensure-images.sh, docs/images.md).
#
# With the caches warm every step finds its tool and this takes seconds (7 s). On a fresh machine
# nearly all the time is compiling: 31.5 minutes cold on a quiet 2-core machine, 64 at load average
# 8 (README.md), before cert-manager's tests build joined the go lane (2026-11-29: 417-524 s of CPU
# more, measured at load 8-18 only; about 4-5 minutes more on a quiet machine, not measured), of which the go lane below is the whole length, the images beside its first step. The
# downloads and Debian's installs would add to it if they waited their turn, so the steps run in
# three lanes side by side, each lane in order:
#   go        the Go compiles, one after another (two at once on 2 cores gain little, and
#             kube-apiserver and the node's binaries are the same k8s.io/kubernetes v1.37.2 at the
#             same dependency versions, so whichever builds second finds nearly all its packages
#             in Go's build cache): kube-apiserver + etcd, the node's binaries, kubectl, helm,
#             kustomize, zlint, cert-manager (after helm, which renders its CRDs);
#   debian    Debian's packages (apt runs one install at a time), then the images, which need
#             buildah and debootstrap: downloads (debootstrap, Node, npm ci), but also the
#             TypeScript build the three Node images share, CPU the go lane shares (13 minutes cold
#             on a quiet machine, beside kube-apiserver's 18);
#   download  the Go modules of the wrapper modules the go lane builds (go mod download; 2.5
#             minutes cold; cert-manager's with go list, 14 s more), and the Prometheus operator's
#             CRDs, so the go lane rarely waits for the network (helm and kustomize, built by
#             version, still fetch their own).
# Every script stays runnable alone and keeps its own lock; these lanes only order them.
# Each step's output goes to a log file of its own; one line per step says where its tool is and
# how long the step took. A failing step prints its log's last lines, later steps of every lane are
# not started (running ones finish: an apt-get or a build cut short helps no one), and the run fails.
#
#   ESO_MTLS_TEST_ENV_LOGS   a folder to keep the steps' logs in (default: a temporary one, removed
#                            when every step succeeded)
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -n "${ESO_MTLS_TEST_ENV_LOGS:-}" ]]; then
  logs="$ESO_MTLS_TEST_ENV_LOGS"
  mkdir -p "$logs"
  rm -f "$logs/failed"
else
  logs="$(mktemp -d "${TMPDIR:-/tmp}/eso-mtls-test-env.XXXXXX")"
fi
failed="$logs/failed"

# say LINES...: to stderr in one piece, never interleaved with another lane's lines.
say() {
  {
    flock 8
    printf '%s\n' "$@" >&2
  } 8>"$logs/.say.lock"
}

# step NAME WHAT COMMAND...: runs COMMAND (a script printing where its tool is) with no terminal
# input, its stdout and stderr to NAME.out and NAME.log; prints WHAT, the tool's place and the time taken, or on failure
# the last lines of the log. Does not start once a step of any lane has failed.
step() {
  local name="$1" what="$2" start=$SECONDS status=0
  shift 2
  if [[ -e "$failed" ]]; then
    say "test env: $name not started: $(cat "$failed") failed"
    return 1
  fi
  "$@" </dev/null >"$logs/$name.out" 2>"$logs/$name.log" || status=$?
  local took=$((SECONDS - start))
  if [[ "$status" == 0 ]]; then
    say "test env: $what $(tr '\n' ' ' <"$logs/$name.out" | sed 's/ $//') ($took s)"
    return 0
  fi
  [[ -e "$failed" ]] || echo "$name" >"$failed"
  local lines
  mapfile -t lines < <(tail -n 80 "$logs/$name.log" | sed 's/^/  | /')
  say "test env: $name FAILED (exit $status after $took s); the last lines of $logs/$name.log:" "${lines[@]}"
  return 1
}

# go mod download in each wrapper module the go lane builds, in the order it builds them.
go_modules() {
  local dir count=0
  for dir in testing/envtest/etcd testing/envtest/kube-apiserver testing/node/kubernetes testing/node/containerd \
    testing/node/coredns scripts/kubectl testing/zlint testing/go-interop testing/images/pause; do
    (cd "$dir" && GOFLAGS=-mod=readonly go mod download) || { echo "go mod download in $dir failed" >&2; return 1; }
    count=$((count + 1))
  done
  echo "$count wrapper modules"
}

go_lane() {
  step testbin "kube-apiserver and etcd in" bash testing/envtest/build-testbin.sh &&
    step node-bins "kubelet, kube-controller-manager, kube-scheduler, kube-proxy, containerd and CoreDNS in" bash testing/node/build-node-bins.sh &&
    step kubectl "kubectl at" bash scripts/ensure-kubectl.sh &&
    step helm "helm at" bash scripts/ensure-helm.sh &&
    step kustomize "kustomize at" bash scripts/ensure-kustomize.sh &&
    step zlint "zlint at" bash scripts/ensure-zlint.sh &&
    step cert-manager "cert-manager (tests build) at" bash scripts/ensure-cert-manager.sh --tests
}

debian_lane() {
  step node-packages "the real node's Debian tools:" bash scripts/ensure-node-packages.sh &&
    step promtool "promtool at" bash scripts/ensure-promtool.sh &&
    step prometheus "prometheus at" bash scripts/ensure-prometheus.sh &&
    step faketime "libfaketime at" bash scripts/ensure-faketime.sh &&
    step chromium "chromium at" bash scripts/ensure-chromium.sh &&
    step softhsm "SoftHSM2 at" bash scripts/ensure-softhsm.sh &&
    step images "images (tarballs and manifest.json) in" bash scripts/ensure-images.sh
}

download_lane() {
  step go-modules "Go modules downloaded for" go_modules &&
    step cert-manager-modules "Go modules downloaded:" bash scripts/ensure-cert-manager.sh --download-only --tests &&
    step prometheus-crds "Prometheus operator CRDs in" bash scripts/ensure-prometheus-crds.sh
}

# Each lane in a process group of its own (set -m), so an interrupted run stops all of them.
set -m
lanes=()
go_lane &
lanes+=($!)
debian_lane &
lanes+=($!)
download_lane &
lanes+=($!)
stop_lanes() {
  local pid
  for pid in "${lanes[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
}
trap 'stop_lanes; exit 130' INT
trap 'stop_lanes; exit 143' TERM

start=$SECONDS
status=0
for pid in "${lanes[@]}"; do wait "$pid" || status=1; done
if [[ "$status" != 0 ]]; then
  say "test env: failed after $((SECONDS - start)) s; every step's log is in $logs"
  exit 1
fi
say "test env: ready in $((SECONDS - start)) s"
[[ -n "${ESO_MTLS_TEST_ENV_LOGS:-}" ]] || rm -rf "$logs"
