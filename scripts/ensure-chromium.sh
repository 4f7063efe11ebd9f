#!/usr/bin/env bash
# Prints the path of a usable chromium, from Debian's 'chromium' package (installed when missing and we are
# root). The rotation-timeline chart tests (a headless browser) use it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/debian-tool.sh"
ensure_debian_tool CHROMIUM chromium chromium
