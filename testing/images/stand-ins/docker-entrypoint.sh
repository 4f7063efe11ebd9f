#!/bin/sh
# The node image's entrypoint, as the real one behaves: an option or something that is not a
# command runs under node (`docker run IMAGE app.js`, `docker run IMAGE --version`); a command runs as is.
set -e
if [ "${1#-}" != "$1" ] || [ -z "$(command -v "$1")" ] || { [ -f "$1" ] && ! [ -x "$1" ]; }; then
  set -- node "$@"
fi
exec "$@"
