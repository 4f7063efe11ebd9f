# Sourced by scripts/ensure-images.sh and scripts/image-stand-ins.sh: where the test images live
# (images_storage_init sets it up); scripts/images.sh takes only the label and dockerfile_bases.
# Everything sits in a buildah storage root of its own under the cache (never the host's
# /var/lib/containers), so the stand-in base images the suite builds are never seen by a builder
# that releases images. storage.conf points containers/storage there too, for the commands a
# person or a test runs by hand: CONTAINERS_STORAGE_CONF="$(…)/storage.conf" buildah images.
#
#   ESO_MTLS_IMAGES_CACHE   cache root (default: $HOME/.cache/eso-mtls/images)
images_cache="${ESO_MTLS_IMAGES_CACHE:-$HOME/.cache/eso-mtls/images}"
images_storage="$images_cache/storage"
images_runroot="$images_cache/run"
images_storage_conf="$images_cache/storage.conf"

# The label every stand-in base carries, and so every image built on one (labels are inherited);
# scripts/images.sh refuses to push an image that has it.
STAND_IN_LABEL=io.eso-mtls.stand-in

images_log() { printf 'images: %s\n' "$*" >&2; }
images_die() { images_log "error: $*"; exit 1; }

images_storage_init() {
  mkdir -p "$images_storage" "$images_runroot"
  if [[ ! -f "$images_storage_conf" ]]; then
    printf '[storage]\ndriver = "overlay"\ngraphroot = "%s"\nrunroot = "%s"\n' "$images_storage" "$images_runroot" >"$images_storage_conf.tmp"
    mv "$images_storage_conf.tmp" "$images_storage_conf"
  fi
  export CONTAINERS_STORAGE_CONF="$images_storage_conf"
}

# buildah on the private root only: the flags say so even if the environment is lost.
bah() { buildah --root "$images_storage" --runroot "$images_runroot" --storage-driver overlay "$@"; }

# A label of a local image, or nothing when the image or the label is absent.
image_label() { bah inspect --type image --format "{{index .OCIv1.Config.Labels \"$2\"}}" "$1" 2>/dev/null || true; }

# The base images (FROM) of a Dockerfile that are not earlier stages, in order.
dockerfile_bases() {
  awk 'toupper($1) == "FROM" { ref = $2; for (i = 3; i <= NF; i++) if (toupper($i) == "AS") stage[$(i + 1)] = 1; if (!(ref in stage) && ref != "scratch") print ref }' "$1" | sed 's/@sha256:.*//' | awk '!seen[$0]++'
}
