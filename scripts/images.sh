#!/usr/bin/env bash
# `npm run images`: builds the controller and example-provider images (deploy/docker/) with the
# first container builder that works here: docker, podman, nerdctl or buildah (ESO_MTLS_IMAGE_BUILDER
# picks one). With none, it says so and exits 3: a build that produced no image must not look like
# success to a release script. docs/images.md says how to push them and point the chart at them.
#
#   npm run images                   build eso-mtls/controller:<version> and eso-mtls/file-provider:<version>
#   npm run images -- --push         build, then push both
#   IMAGE_REPOSITORY_PREFIX          where the images go (default eso-mtls; e.g. ghcr.io/you)
#   IMAGE_TAG                        tag (default: the controller package's version)
#
# Exit status: 0 built (and pushed); 1 a build or push failed; 2 bad arguments; 3 no builder found.
set -euo pipefail
cd "$(dirname "$0")/.."

push=false
for arg in "$@"; do
  case "$arg" in
    --push) push=true ;;
    *) echo "images: unknown argument '$arg'; usage: npm run images [-- --push]" >&2; exit 2 ;;
  esac
done

# A builder counts only if it can build now: a docker CLI without a reachable daemon does not.
usable() {
  case "$1" in
    docker | podman | nerdctl) "$1" info >/dev/null 2>&1 ;;
    buildah) buildah version >/dev/null 2>&1 ;;
    *) return 1 ;;
  esac
}

pick_builder() {
  local candidates=(docker podman nerdctl buildah) found=()
  if [[ -n "${ESO_MTLS_IMAGE_BUILDER:-}" ]]; then candidates=("$ESO_MTLS_IMAGE_BUILDER"); fi
  for b in "${candidates[@]}"; do
    command -v "$b" >/dev/null 2>&1 || continue
    if usable "$b"; then echo "$b"; return 0; fi
    found+=("$b")
  done
  {
    if ((${#found[@]})); then
      echo "images: no container builder works here: ${found[*]} installed but not usable ('${found[0]} info' fails: is its daemon or socket up?)."
    else
      echo "images: no container builder found (looked for ${candidates[*]} on PATH)."
    fi
    echo "images: no image was built. Install one of docker, podman, nerdctl or buildah, or build elsewhere: docs/images.md."
  } >&2
  return 3
}

builder="$(pick_builder)" || exit $?
prefix="${IMAGE_REPOSITORY_PREFIX:-eso-mtls}"
version="$(node -p 'require("./packages/controller/package.json").version')"
tag="${IMAGE_TAG:-$version}"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
created="$(date -u +%Y-%m-%dT%H:%M:%SZ)"

build() { # NAME: deploy/docker/NAME.Dockerfile -> $prefix/NAME:$tag
  local name="$1" file="deploy/docker/$1.Dockerfile" image="$prefix/$1:$tag"
  local args=(-f "$file" -t "$image" --build-arg "VERSION=$version" --build-arg "REVISION=$revision" --build-arg "CREATED=$created")
  # BuildKit (docker, nerdctl) reads <Dockerfile>.dockerignore by itself; podman and buildah are told.
  case "$builder" in
    podman | buildah) args+=(--ignorefile "$file.dockerignore") ;;
  esac
  echo "images: $builder building $image from $file" >&2
  "$builder" build "${args[@]}" .
  if $push; then
    echo "images: $builder pushing $image" >&2
    "$builder" push "$image"
  fi
  echo "$image"
}

build controller
build file-provider
