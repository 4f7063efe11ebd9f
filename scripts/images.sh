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
# Exit status: 0 built (and pushed); 1 a build or push failed; 2 bad arguments; 3 no builder found;
# 4 --push refused: an image is, or would be, built on a local stand-in base (docs/images.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/image-storage.sh # STAND_IN_LABEL, dockerfile_bases

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

# What a local image of the builder stands in for (its io.eso-mtls.stand-in.for label), or nothing:
# an image that is not local, or not a stand-in, or not built on one.
stand_in_for() {
  local format="{{ index .Config.Labels \"$STAND_IN_LABEL\" }} {{ index .Config.Labels \"$STAND_IN_LABEL.for\" }}" out
  case "$builder" in
    buildah) format="${format//.Config./.OCIv1.Config.}" && out="$(buildah inspect --type image --format "$format" "$1" 2>/dev/null)" ;;
    *) out="$("$builder" image inspect --format "$format" "$1" 2>/dev/null)" ;;
  esac || return 0
  out="${out//<no value>/}"
  if [[ "$out" == true* ]]; then
    local what="${out#true}"
    echo "${what# }"
  fi
}

refuse_stand_in() { # IMAGE WHAT-IT-IS REAL-IMAGE
  {
    echo "images: refusing to push: $2 carries $STAND_IN_LABEL=true: it is, or is built on, a local stand-in for $3,"
    echo "images: made by scripts/image-stand-ins.sh for the tests because no registry was reachable. Nothing built on one may"
    echo "images: reach a registry. Push from a builder whose storage holds the real base images (pull them), or drop --push"
    echo "images: to build locally only; docs/images.md#stand-in-base-images says how a stand-in differs."
  } >&2
  exit 4
}

# With --push, refuse before building anything when a base image the builder would use is a stand-in:
# the build stage's base counts too, though only the runtime base's labels reach the image.
if $push; then
  for name in controller file-provider; do
    while read -r base; do
      for_what="$(stand_in_for "$base")"
      [[ -z "$for_what" ]] || refuse_stand_in "$base" "deploy/docker/$name.Dockerfile's base image $base" "$for_what"
    done < <(dockerfile_bases "deploy/docker/$name.Dockerfile")
  done
fi

build() { # NAME: deploy/docker/NAME.Dockerfile -> $prefix/NAME:$tag
  local name="$1" file="deploy/docker/$1.Dockerfile" image="$prefix/$1:$tag"
  local args=(-f "$file" -t "$image" --build-arg "VERSION=$version" --build-arg "REVISION=$revision" --build-arg "CREATED=$created")
  # BuildKit (docker, nerdctl) reads <Dockerfile>.dockerignore by itself; podman and buildah are told.
  # BuildKit and podman keep a layer cache by default; buildah is asked to, so the second image
  # reuses the first one's install and build of the workspace (the Dockerfiles share those lines).
  case "$builder" in
    podman) args+=(--ignorefile "$file.dockerignore") ;;
    buildah) args+=(--ignorefile "$file.dockerignore" --layers) ;;
  esac
  echo "images: $builder building $image from $file" >&2
  "$builder" build "${args[@]}" .
  if $push; then
    # A base that turned into a stand-in during the build still shows here: labels are inherited.
    for_what="$(stand_in_for "$image")"
    [[ -z "$for_what" ]] || refuse_stand_in "$image" "the image $image just built" "$for_what"
    echo "images: $builder pushing $image" >&2
    "$builder" push "$image"
  fi
  echo "$image"
}

build controller
build file-provider
