#!/usr/bin/env bash
# Prints the path of libfaketime's multi-threaded preload library (libfaketimeMT.so.1), from Debian's
# 'faketime' package (installed when missing and we are root). The faked-clock tests and the soak
# preload it into Node processes; ESO_MTLS_LIBFAKETIME=/path/to/libfaketimeMT.so.1 overrides.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/debian-tool.sh"

find_libfaketime() {
  if [[ -n "${ESO_MTLS_LIBFAKETIME:-}" ]]; then
    [[ -r "$ESO_MTLS_LIBFAKETIME" ]] && { echo "$ESO_MTLS_LIBFAKETIME"; return 0; }
    echo "ESO_MTLS_LIBFAKETIME=$ESO_MTLS_LIBFAKETIME is not a readable file" >&2
    exit 1
  fi
  local so
  for so in /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1; do
    [[ -r "$so" ]] && { echo "$so"; return 0; }
  done
  return 1
}

find_libfaketime && exit 0
# debian-tool.sh installs packages by a binary they ship: the 'faketime' wrapper pulls in the library.
ensure_debian_tool ESO_MTLS_FAKETIME faketime faketime >/dev/null
find_libfaketime && exit 0
echo "libfaketimeMT.so.1 not found. Install Debian's 'libfaketime' package (apt-get install --no-install-recommends faketime)," >&2
echo "or set ESO_MTLS_LIBFAKETIME=/path/to/libfaketimeMT.so.1." >&2
exit 1
