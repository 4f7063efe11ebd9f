#!/usr/bin/env bash
# Prints the path of SoftHSM2's PKCS#11 module (libsofthsm2.so), from Debian's 'softhsm2' package
# (installed when missing and we are root). The @eso-mtls/pkcs11 tests initialise a token per test
# with softhsm2-util and load this module; ESO_MTLS_SOFTHSM2_MODULE=/path/to/libsofthsm2.so overrides.
# It also checks that the PKCS#11 binding (pkcs11js, an optional dependency that `npm ci` builds with
# node-gyp and drops when the build fails) loads, and when it does not and we are root, installs a C++
# toolchain from Debian and builds it once more (npm install --no-save: package.json and the lock stay).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/debian-tool.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

find_module() {
  if [[ -n "${ESO_MTLS_SOFTHSM2_MODULE:-}" ]]; then
    [[ -r "$ESO_MTLS_SOFTHSM2_MODULE" ]] && { echo "$ESO_MTLS_SOFTHSM2_MODULE"; return 0; }
    echo "ESO_MTLS_SOFTHSM2_MODULE=$ESO_MTLS_SOFTHSM2_MODULE is not a readable file" >&2
    exit 1
  fi
  local so
  for so in /usr/lib/softhsm/libsofthsm2.so /usr/lib/*/softhsm/libsofthsm2.so; do
    [[ -r "$so" ]] && { echo "$so"; return 0; }
  done
  return 1
}

binding_loads() {
  (cd "$root/packages/pkcs11" && node -e "require('pkcs11js')" >/dev/null 2>&1)
}

ensure_binding() {
  binding_loads && return 0
  echo "pkcs11js (optional dependency of @eso-mtls/pkcs11) does not load: building it" >&2
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    ensure_debian_tool ESO_MTLS_CXX g++ g++ >/dev/null
    ensure_debian_tool ESO_MTLS_MAKE make make >/dev/null
    ensure_debian_tool ESO_MTLS_PYTHON3 python3 python3 >/dev/null
  fi
  (cd "$root" && npm install --no-save --foreground-scripts "pkcs11js@$(node -p "require('./packages/pkcs11/package.json').optionalDependencies.pkcs11js")") >&2 || true
  binding_loads && return 0
  echo "pkcs11js still does not load. It needs a C++ toolchain (g++, make, python3) and the Node headers:" >&2
  echo "set nodedir in .npmrc where node-gyp cannot download them, then run npm ci." >&2
  return 1
}

# softhsm2-util (which the tests run to initialise tokens) comes with the module.
ensure_debian_tool ESO_MTLS_SOFTHSM2_UTIL softhsm2-util softhsm2 >/dev/null
ensure_binding
find_module && exit 0
echo "libsofthsm2.so not found. Install Debian's 'softhsm2' package (apt-get install --no-install-recommends softhsm2)," >&2
echo "or set ESO_MTLS_SOFTHSM2_MODULE=/path/to/libsofthsm2.so." >&2
exit 1
