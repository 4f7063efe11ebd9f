#!/usr/bin/env bash
# Prints the path of a usable headless Chromium, installing Debian's `chromium` package when we are root.
# The rotation-timeline chart tests call this, so a missing browser fails them loudly instead of skipping them.
set -euo pipefail

find_chromium() {
  if [[ -n "${CHROMIUM:-}" && -x "${CHROMIUM}" ]]; then echo "${CHROMIUM}"; return 0; fi
  command -v chromium 2>/dev/null && return 0
  [[ -x /usr/bin/chromium ]] && { echo /usr/bin/chromium; return 0; }
  return 1
}

if find_chromium; then exit 0; fi

if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium not found. Install Debian's 'chromium' package (apt-get install --no-install-recommends chromium)," >&2
  echo "or put chromium on PATH, or set CHROMIUM=/path/to/chromium." >&2
  exit 1
fi

{
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
} >&2

if find_chromium; then exit 0; fi
echo "installed the 'chromium' package but chromium is still not on PATH" >&2
exit 1
