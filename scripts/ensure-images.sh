#!/usr/bin/env bash
# Builds (once per set of inputs, cached outside the clone) every image the real-node suite runs, and
# prints ONLY the folder holding them on stdout: one docker-archive per image, ready for
# `ctr -n k8s.io images import FILE`, and manifest.json:
#   { "images": { "<image name>": { "role": "controller", "tarball": "controller.tar",
#                                   "standIn": true, "inputs": "sha256:…" }, … } }
# standIn is true when the image carries io.eso-mtls.stand-in (it is, or is built on, a local
# stand-in for an image we could not pull; docs/images.md). The images:
#   controller, controller-hsm, file-provider   deploy/docker/<role>.Dockerfile, unchanged, on the
#                                               stand-in bases of scripts/image-stand-ins.sh
#   eso-client                                  testing/images/eso-client.Dockerfile (testing/go-interop's
#                                               reloading client, static)
#   pause                                       testing/images/pause.Dockerfile, named as containerd pins it
# Each is keyed by a hash of its inputs: the Dockerfile and ignore file, every file of its build
# context (the worktree's files, tracked or not, that git does not ignore, under the paths the ignore
# file lets in: the build sees exactly these), its base images' ids and the version; for the Go
# images, the static binary itself. Built with buildah --isolation chroot in the private storage
# root of scripts/image-storage.sh, never the host's.
#
#   ESO_MTLS_IMAGES_CACHE   cache root (default: $HOME/.cache/eso-mtls/images)
#   ESO_MTLS_IMAGES_KEEP    how many sets of images to keep, newest used first (default 4)
#   GO                      go command (default: go on PATH)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/image-storage.sh
source scripts/go-build-flags.sh
images_storage_init

for tool in buildah debootstrap "${GO:-go}" git; do
  command -v "$tool" >/dev/null 2>&1 || images_die "'$tool' not found: building the test images needs buildah and debootstrap (apt-get install --no-install-recommends buildah debootstrap), Go (https://go.dev/dl) and git"
done
[[ "$(id -u)" == 0 ]] || images_die "building the test images needs root (debootstrap, buildah --isolation chroot); run as root, or in a root container"

mkdir -p "$images_cache/tarballs" "$images_cache/sets" "$images_cache/locks" "$images_cache/npm-cache"

# Several worktrees and test processes share the cache: each step locks only what it changes, so a
# run that finds its images cached never waits for another worktree's build of other inputs.
locked() { # LOCK-FILE WHAT COMMAND...: COMMAND under an exclusive lock, saying when it waits
  local lock="$1" what="$2" fd
  shift 2
  exec {fd}>"$lock"
  if ! flock -n "$fd"; then
    images_log "waiting for another run building $what"
    flock "$fd"
  fi
  "$@"
  local status=$?
  exec {fd}>&-
  return "$status"
}

# The storage itself: builds, pulls and pushes share it; the pruning below has it alone. Removing
# an image while another worktree's build looks through the storage for its cached steps fails
# that build ("getting top layer info: layer not known"), as a CI run beside a second worktree saw.
storage() { # shared|exclusive COMMAND...: COMMAND while holding the storage lock in that mode
  local mode="$1" fd
  shift
  exec {fd}>"$images_cache/.storage.lock"
  if ! flock -n "--$mode" "$fd"; then
    images_log "waiting for another run's use of the image storage"
    flock "--$mode" "$fd"
  fi
  "$@"
  local status=$?
  exec {fd}>&-
  return "$status"
}

locked "$images_cache/.stand-ins.lock" "the stand-in bases" storage shared bash scripts/image-stand-ins.sh

version="$(node -p 'require("./packages/controller/package.json").version')"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
work="$(mktemp -d "$images_cache/.work.XXXXXX")"
trap 'rm -rf "$work"' EXIT

digest() { sha256sum | cut -c1-64; }

# The worktree's files a Dockerfile's build context takes: those under the `!path` lines of its
# ignore file that git tracks or would track (node_modules, dist/ and the like are ignored there),
# less those its other lines leave out again (packages/*/test, say), so that a change to a file
# the build never sees does not change the key.
context_files() {
  local paths excluded pattern
  mapfile -t paths < <(sed -n 's/^!//p' "$1")
  mapfile -t excluded < <(grep -v -e '^!' -e '^#' -e '^\*$' -e '^$' "$1")
  git ls-files -z -co --exclude-standard -- "${paths[@]}" | while IFS= read -r -d '' f; do
    [[ -f "$f" ]] || continue # a tracked file deleted in the worktree is not in the context
    for pattern in "${excluded[@]}"; do
      # shellcheck disable=SC2053 # the pattern is a glob on purpose
      [[ "$f" == $pattern || "$f" == $pattern/* ]] && continue 2
    done
    printf '%s\0' "$f"
  done
}

# ensure_image ROLE NAME KEY BUILD_ARGS... : the image NAME in storage and its tarball, building when
# missing. Prints the tarball's path.
ensure_image() {
  local tarball="$images_cache/tarballs/$1-$3.tar"
  locked "$images_cache/locks/$1-$3.lock" "$2" build_image "$@"
  # Used now: the pruning below keeps what was used in the last hours.
  touch "$tarball"
  echo "$tarball"
}

build_image() {
  local role="$1" name="$2" key="$3"
  shift 3
  local tarball="$images_cache/tarballs/$role-$key.tar"
  if [[ "$(image_label "$name" io.eso-mtls.inputs)" != "sha256:$key" ]]; then
    if [[ -f "$tarball" ]]; then
      storage shared bah pull --quiet "docker-archive:$tarball" >/dev/null # the storage was pruned or reset
    else
      images_log "building $name"
      local start=$SECONDS
      storage shared bah bud --isolation chroot --pull-never --quiet --label "io.eso-mtls.inputs=sha256:$key" -t "$name" "$@" >"$work/$role.build.log" 2>&1 \
        || { tail -n 40 "$work/$role.build.log" >&2; images_die "building $name failed (the last lines above)"; }
      images_log "built $name in $((SECONDS - start)) s"
    fi
  fi
  if [[ ! -f "$tarball" ]]; then
    storage shared bah push --quiet "$name" "docker-archive:$work/$role.tar:$name" >&2
    mv "$work/$role.tar" "$tarball"
  fi
}

# The builds' npm reaches the registry as the host's does: where the host trusts an extra CA (a
# TLS-intercepting proxy, say), so does the build. Build-time mounts only: nothing of them enters
# an image, and npm ci still checks every package against the lockfile's integrity hashes.
npm_mounts=(-v "$images_cache/npm-cache:/root/.npm")
host_ca="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}"
if [[ -r "$host_ca" ]]; then
  printf 'cafile=/root/.npmrc-ca.crt\n' >"$work/npmrc"
  npm_mounts+=(-v "$host_ca:/root/.npmrc-ca.crt:ro" -v "$work/npmrc:/root/.npmrc:ro")
fi

declare -A tarball_of name_of
roles=()

# The images of deploy/docker: their Dockerfiles unchanged, on the stand-in bases. Their build
# stages begin with the same lines (the workspace's npm ci and build), and --layers keeps each
# step as a cached layer, so the first image to build does that work and the others reuse it. For
# the cache to match, they build from one context folder (the files any of them takes: each
# one's ignore file filters it), so `COPY packages/` sees the same files with the same times.
node_roles=(controller controller-hsm file-provider)
node_ctx="$work/node-images.context"
mkdir -p "$node_ctx"
for role in "${node_roles[@]}"; do context_files "deploy/docker/$role.Dockerfile.dockerignore" >"$work/$role.files"; done
for role in "${node_roles[@]}"; do cat "$work/$role.files"; done | sort -zu | tar --null -T - -cf - | tar -xf - -C "$node_ctx"
for role in "${node_roles[@]}"; do
  file="deploy/docker/$role.Dockerfile"
  bases="$(dockerfile_bases "$file" | while read -r ref; do printf '%s=%s\n' "$ref" "$(bah inspect --type image --format '{{.FromImageID}}' "$ref")"; done)"
  # The key: this image's own context only, so a file only another image takes does not change it.
  key="$({
    printf 'recipe 1\nversion %s\n%s\n' "$version" "$bases"
    cat "$file" "$file.dockerignore"
    sort -z "$work/$role.files" | xargs -0 sha256sum
  } | digest)"
  key="${key:0:16}"
  name="localhost/eso-mtls/$role:$key"
  # The npm cache is shared between builds (content-addressed: it changes no result, only the time).
  tarball_of[$role]="$(ensure_image "$role" "$name" "$key" -f "$file" --ignorefile "$file.dockerignore" --layers \
    --build-arg "VERSION=$version" --build-arg "REVISION=$revision" --build-arg "CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "${npm_mounts[@]}" "$node_ctx")"
  name_of[$role]="$name"
  roles+=("$role")
done

# A static Go program in an image of its own: the key is the binary itself (-trimpath and no VCS
# stamp make it depend on the sources and the Go version only).
go_image() { # ROLE NAME-WITHOUT-TAG|FULL-NAME MODULE-DIR PACKAGE BINARY DOCKERFILE [BUILD-FLAGS...]
  local role="$1" name="$2" module="$3" package="$4" binary="$5" file="$6" ctx="$work/$1.context"
  shift 6
  mkdir -p "$ctx"
  (cd "$module" && CGO_ENABLED=0 "${GO:-go}" build -mod=readonly -buildvcs=false "${go_tool_flags[@]}" -ldflags='-s -w' -o "$ctx/$binary" "$package") >&2 \
    || images_die "go build of $package in $module failed"
  local key
  key="$({ printf '%s\n' "$@"; cat "$file" "$ctx/$binary"; } | digest)"
  key="${key:0:16}"
  [[ "$name" == *:* ]] || name="$name:$key"
  tarball_of[$role]="$(ensure_image "$role" "$name" "$key" -f "$file" "$@" "$ctx")"
  name_of[$role]="$name"
  roles+=("$role")
}

go_image eso-client localhost/eso-mtls/eso-client testing/go-interop ./cmd/reloading-client reloading-client testing/images/eso-client.Dockerfile

# The sandbox image under the name the containerd we run pins (its DefaultSandboxImage).
containerd_src="$(cd testing/node/containerd && "${GO:-go}" mod download -json github.com/containerd/containerd/v2 | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).Dir))')"
pause_name="$(sed -n 's/^\s*DefaultSandboxImage\s*=\s*"\([^"]*\)".*/\1/p' "$containerd_src/internal/cri/config/config.go" 2>/dev/null | head -n 1)"
[[ -n "$pause_name" ]] || images_die "cannot read DefaultSandboxImage from $containerd_src/internal/cri/config/config.go (containerd of testing/node/containerd/go.mod)"
# It stands in for the real image of that name, and says so: nothing may push it.
go_image pause "$pause_name" testing/images/pause . pause testing/images/pause.Dockerfile \
  --label "$STAND_IN_LABEL=true" --label "$STAND_IN_LABEL.for=$pause_name"

# This set's folder: hard links to the tarballs and manifest.json. Another worktree's set (other
# inputs) has a folder of its own, so a test importing one is never disturbed by a build of another.
make_set() {
  local set_key set_dir tmp_set entries=() r
  set_key="$(for r in "${roles[@]}"; do echo "$r ${name_of[$r]} ${tarball_of[$r]}"; done | digest)"
  set_dir="$images_cache/sets/${set_key:0:16}"
  if [[ ! -f "$set_dir/manifest.json" ]]; then
    tmp_set="$(mktemp -d "$images_cache/sets/.new.XXXXXX")"
    for r in "${roles[@]}"; do
      ln "${tarball_of[$r]}" "$tmp_set/$r.tar"
      entries+=("${name_of[$r]}" "$r" "$(image_label "${name_of[$r]}" "$STAND_IN_LABEL")" "$(image_label "${name_of[$r]}" io.eso-mtls.inputs)")
    done
    node -e '
      const a = process.argv.slice(1), images = {};
      for (let i = 0; i < a.length; i += 4) images[a[i]] = { role: a[i + 1], tarball: `${a[i + 1]}.tar`, standIn: a[i + 2] === "true", inputs: a[i + 3] };
      process.stdout.write(JSON.stringify({ images }, null, 2) + "\n");
    ' "${entries[@]}" >"$tmp_set/manifest.json"
    rm -rf "$set_dir"
    mv "$tmp_set" "$set_dir"
  fi
  touch "$set_dir"
  storage exclusive prune
  echo "$set_dir"
}

# Keeps the newest sets used; drops the tarballs no kept set links and no run used in the last
# 3 hours (a run touches each tarball it uses before making its set), then the images in storage
# whose tarball is gone, and the cached build steps over 3 hours old.
prune() {
  local keep="${ESO_MTLS_IMAGES_KEEP:-4}" image key
  ls -1dt "$images_cache/sets"/*/ | tail -n +"$((keep + 1))" | xargs -r rm -rf
  find "$images_cache/tarballs" -name '*.tar' -links 1 -mmin +180 -delete
  find "$images_cache/locks" -name '*.lock' -mmin +1440 -delete
  bah images --noheading --filter "label=io.eso-mtls.inputs" --format '{{.ID}} {{.Name}}:{{.Tag}}' | while read -r id image; do
    key="$(image_label "$id" io.eso-mtls.inputs)"
    local repo="${image%:*}"
    # An untagged one was replaced under its name (the pause image's name is fixed).
    [[ "$image" != "<none>:<none>" && -f "$images_cache/tarballs/${repo##*/}-${key#sha256:}.tar" ]] || bah rmi "$id" >/dev/null 2>&1 || true
  done
  # The steps --layers cached for the Node images (untagged images): those made over 3 hours ago.
  # A tagged image keeps the layers it uses whatever happens to the steps that made them.
  bah images --all --json | node -e '
    let s = "";
    process.stdin.on("data", (d) => (s += d)).on("end", () => {
      const old = Math.floor(Date.now() / 1000) - 3 * 3600;
      const steps = (JSON.parse(s || "[]") ?? []).filter((i) => (i.names ?? []).length === 0 && i.created < old);
      for (const i of steps) console.log(i.id);
    });
  ' | while read -r id; do bah rmi "$id" >/dev/null 2>&1 || true; done
}

locked "$images_cache/.sets.lock" "a set of images" make_set
