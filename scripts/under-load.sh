#!/usr/bin/env bash
# The suites that hold wall-clock bounds (fences, hang limits, reload waits), each run alone under a
# CPU load generator: stress-ng --cpu 8 on 2 cores holds the load average at 9-10. Prints one line
# per run (round, suite, result, seconds, load average at start and end) and exits non-zero if any
# run failed. Needs Debian's stress-ng (installed when missing and we are root) and the test set-up
# (scripts/prepare-test-env.sh) for the real apiserver.
#   ROUNDS   how many times each suite runs (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${ROUNDS:-3}"
suites=(
  packages/controller/test/leader-election.test.ts
  packages/controller/test/leader-failover.test.ts
  packages/controller/test/controller-process.test.ts
  packages/controller/test/probes.test.ts
  packages/grpc/test/watcher.test.ts
  packages/grpc/test/watcher-start.test.ts
  packages/grpc/test/reload.test.ts
  packages/grpc/test/client-reload.test.ts
  packages/grpc/test/pod-certificate-reload.test.ts
  packages/grpc/test/rotation-in-flight.test.ts
  packages/grpc/test/retry.test.ts
)
if ! command -v stress-ng >/dev/null; then
  [[ "$(id -u)" == 0 ]] || { echo "under-load: stress-ng is missing; install Debian's stress-ng" >&2; exit 1; }
  apt-get install -y -qq stress-ng >/dev/null || { apt-get update -qq && apt-get install -y -qq stress-ng >/dev/null; }
fi
logs="$(mktemp -d "${TMPDIR:-/tmp}/eso-mtls-under-load.XXXXXX")"
stress-ng --cpu 8 --timeout 7200s --quiet &
stress=$!
trap 'kill $stress 2>/dev/null || true' EXIT
sleep 60 # the one-minute load average catches up with the generator
failed=0
for round in $(seq 1 "$rounds"); do
  for suite in "${suites[@]}"; do
    name="$(basename "$suite" .test.ts)"
    load0="$(cut -d' ' -f1 /proc/loadavg)"
    start=$(date +%s)
    if node --experimental-vm-modules node_modules/jest/bin/jest.js --runInBand "$suite" >"$logs/$round-$name.log" 2>&1; then
      result=PASS
    else
      result=FAIL
      failed=$((failed + 1))
    fi
    echo "round=$round suite=$name result=$result secs=$(($(date +%s) - start)) load1=$load0..$(cut -d' ' -f1 /proc/loadavg)"
  done
done
echo "under-load: $failed failed runs; logs in $logs"
[[ $failed == 0 ]]
