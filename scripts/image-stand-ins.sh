#!/usr/bin/env bash
# Builds, once per recipe, local stand-ins for the base images deploy/docker/*.Dockerfile name
# (no container registry is reachable here; Debian's mirror and the npm registry are), in the
# private storage root of scripts/image-storage.sh, tagged with the exact names the Dockerfiles
# use so they build unchanged:
#   node:<major>-trixie-slim                  testing/images/stand-ins/node.Containerfile
#   gcr.io/distroless/nodejs<major>-debian13:nonroot
#                                             testing/images/stand-ins/distroless-nodejs.Containerfile
# Debian trixie from debootstrap (--variant=minbase), Node from the npm registry's `node` package at
# the release scripts/node-releases.json pins for its main line, npm as that Node bundles it.
# Each carries io.eso-mtls.stand-in=true and io.eso-mtls.stand-in.for=<the real image>, which
# images built on it inherit. docs/images.md says how each differs from the real one.
# Prints nothing on stdout; ensure-images.sh calls it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/image-storage.sh
images_storage_init
here=testing/images/stand-ins

# The main line's Node, from the cache scripts/node-cache.mjs fills (the `node` package's binary
# comes from its platform package node-<os>-<arch>, the official build with headers and docs).
node_bin="$(node --input-type=module -e "import { ensureNode, nodeReleases } from './scripts/node-cache.mjs'; const r = nodeReleases(); console.log(ensureNode(r.releases[r.main]))")"
node_version="$("$node_bin/node" --version)"
node_version="${node_version#v}"
node_major="${node_version%%.*}"
node_dist="$(cd "$node_bin/.." && ls -d "$PWD"/node_modules/node-linux-* 2>/dev/null | head -n 1)"
[[ -x "$node_dist/bin/node" && -d "$node_dist/include/node" ]] || images_die "no Node platform package (bin/node and include/node) next to $node_bin; remove $(dirname "$(dirname "$(dirname "$node_bin")")") and run again"
# npm as this Node release bundles it: the newest "upgrade npm to X" of its changelog.
npm_version="$(grep -m 1 -oE 'upgrade npm to [0-9]+\.[0-9]+\.[0-9]+' "$node_dist/CHANGELOG.md" | awk '{ print $4 }')"
[[ -n "$npm_version" ]] || images_die "cannot tell which npm Node $node_version bundles from $node_dist/CHANGELOG.md ('upgrade npm to X.Y.Z')"

# The names the Dockerfiles use, and which recipe stands in for each.
node_ref="" distroless_ref=""
while read -r ref; do
  case "$ref" in
    node:"$node_major"-trixie-slim) node_ref="$ref" ;;
    gcr.io/distroless/nodejs"$node_major"-debian13:nonroot) distroless_ref="$ref" ;;
    *) images_die "no stand-in for base image '$ref' (deploy/docker): the stand-ins are node:$node_major-trixie-slim and gcr.io/distroless/nodejs$node_major-debian13:nonroot, Node from scripts/node-releases.json's main line; add a recipe to $here or fix the FROM" ;;
  esac
done < <(for f in deploy/docker/*.Dockerfile; do dockerfile_bases "$f"; done | sort -u)
[[ -n "$node_ref" && -n "$distroless_ref" ]] || images_die "deploy/docker names no node:$node_major-trixie-slim or no distroless nodejs$node_major base"
# Stored fully qualified, as a pull would have named them; FROM node:... finds docker.io/library/node:...
node_tag="docker.io/library/$node_ref"

recipe="$(cat scripts/image-stand-ins.sh scripts/image-debian-rootfs.sh "$here"/* | sha256sum | cut -c1-64) node=$node_version npm=$npm_version"
key="$(printf '%s' "$recipe" | sha256sum | cut -c1-16)"
if [[ "$(image_label "$node_tag" io.eso-mtls.stand-in.recipe)" == "$key" && "$(image_label "$distroless_ref" io.eso-mtls.stand-in.recipe)" == "$key" ]]; then
  exit 0
fi

images_log "building the stand-in base images (recipe $key: Node $node_version, npm $npm_version, Debian trixie); a few minutes, once"
work="$(mktemp -d "$images_cache/.stand-ins.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Debian trixie, made like debian:trixie-slim (its own cache: the stand-ins' recipe changes more often).
rootfs_tar="$(bash scripts/image-debian-rootfs.sh)"
ln "$rootfs_tar" "$work/rootfs.tar" 2>/dev/null || cp "$rootfs_tar" "$work/rootfs.tar"

# Node as the official tarball lays it out under /usr/local (bin, include, share, docs), npm in
# lib/node_modules/npm from the npm registry.
mkdir -p "$work/node/lib/node_modules/npm" "$work/nodejs/bin"
cp -a "$node_dist/bin" "$node_dist/include" "$node_dist/share" "$work/node/"
images_log "npm $npm_version from the npm registry"
(cd "$work" && npm pack --silent "npm@$npm_version" >/dev/null)
tar -xzf "$work/npm-$npm_version.tgz" -C "$work/node/lib/node_modules/npm" --strip-components=1 --no-same-owner
# distroless keeps the tarball's files in /nodejs but npm, corepack and the headers.
cp -a "$node_dist/bin/node" "$work/nodejs/bin/"
cp -a "$node_dist/share" "$node_dist/CHANGELOG.md" "$node_dist/LICENSE" "$node_dist/README.md" "$work/nodejs/"
cp "$here/docker-entrypoint.sh" "$work/"

build_stand_in() { # TAG FOR CONTAINERFILE ARGS...
  local tag="$1" for="$2" file="$3"
  shift 3
  images_log "building stand-in $tag"
  bah bud --isolation chroot --pull-never --layers=false --quiet -f "$file" -t "$tag" \
    --label "$STAND_IN_LABEL=true" --label "$STAND_IN_LABEL.for=$for" --label "io.eso-mtls.stand-in.recipe=$key" \
    --label "io.eso-mtls.stand-in.doc=docs/images.md#stand-in-base-images" "$@" "$work" >/dev/null
}
build_stand_in "$node_tag" "$node_tag" "$here/node.Containerfile" --build-arg "NODE_VERSION=$node_version"
build_stand_in "$distroless_ref" "$distroless_ref" "$here/distroless-nodejs.Containerfile" --build-arg "NODE_STAND_IN=$node_tag"
images_log "stand-ins ready: $node_tag, $distroless_ref"
