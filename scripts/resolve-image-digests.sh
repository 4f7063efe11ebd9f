#!/usr/bin/env bash
# Pins the base images of deploy/docker/*.Dockerfile by digest: asks each image's registry (the
# Registry HTTP API, anonymous pull token) for the digest its tag points at now, and rewrites the
# FROM line as `FROM image:tag@sha256:...`. Writes nothing unless every image resolved, so a
# Dockerfile never holds a digest that no registry reported. Run it again to refresh (docs/images.md).
#
#   bash scripts/resolve-image-digests.sh [DOCKERFILE...]     default: deploy/docker/*.Dockerfile
#
# Exit status: 0 written; 1 a registry was unreachable or answered without a valid digest.
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(...) stops the script too
cd "$(dirname "$0")/.."
files=("$@")
((${#files[@]})) || files=(deploy/docker/*.Dockerfile)

ACCEPT='application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json'

fail() {
  echo "resolve-image-digests: $1" >&2
  echo "resolve-image-digests: nothing written; the Dockerfiles stay pinned by tag only." >&2
  exit 1
}

# REF (registry/repo:tag, Docker Hub short names allowed) -> "host repo tag"
split_ref() {
  local ref="$1" name tag host repo
  name="${ref%:*}"
  tag="${ref##*:}"
  [[ "$name" != "$ref" && "$tag" != */* ]] || fail "FROM $ref has no tag; pin base images as image:tag"
  host="${name%%/*}"
  if [[ "$name" == */* && ( "$host" == *.* || "$host" == *:* || "$host" == localhost ) ]]; then
    repo="${name#*/}"
  else
    host=registry-1.docker.io
    repo="$name"
    [[ "$repo" == */* ]] || repo="library/$repo"
  fi
  echo "$host $repo $tag"
}

# Value of KEY="..." in a WWW-Authenticate header line.
auth_param() { sed -nE "s/.*[ ,]$1=\"([^\"]*)\".*/\\1/p" <<<"$2"; }

manifest_head() { # URL [TOKEN]
  local auth=()
  [[ -z "${2:-}" ]] || auth=(-H "Authorization: Bearer $2")
  curl -sS -I --max-time 30 -H "Accept: $ACCEPT" "${auth[@]}" "$1" 2>&1
}

digest_of() { # REF -> sha256:...
  local ref="$1" parts host repo tag url headers challenge realm service scope token digest
  parts="$(split_ref "$ref")"
  read -r host repo tag <<<"$parts"
  url="https://$host/v2/$repo/manifests/$tag"
  headers="$(manifest_head "$url")" || fail "cannot reach $host to resolve $ref: ${headers##*$'\n'}"
  if grep -qE '^HTTP/[0-9.]+ 401' <<<"$headers"; then
    challenge="$(grep -i '^www-authenticate:' <<<"$headers" | tr -d '\r')"
    realm="$(auth_param realm "$challenge")"
    service="$(auth_param service "$challenge")"
    scope="$(auth_param scope "$challenge")"
    [[ -n "$realm" ]] || fail "$host answered 401 for $ref without a Bearer realm: '$challenge'"
    token="$(curl -sS --max-time 30 -G "$realm" --data-urlencode "service=$service" --data-urlencode "scope=${scope:-repository:$repo:pull}" |
      sed -nE 's/.*"(token|access_token)" *: *"([^"]+)".*/\2/p' | head -n1)" || fail "cannot get a pull token for $ref from $realm"
    [[ -n "$token" ]] || fail "$realm gave no pull token for $ref"
    headers="$(manifest_head "$url" "$token")" || fail "cannot reach $host to resolve $ref: ${headers##*$'\n'}"
  fi
  grep -qE '^HTTP/[0-9.]+ 200' <<<"$headers" || fail "$host answered '$(head -n1 <<<"$headers" | tr -d '\r')' for $ref; does the tag exist?"
  digest="$(grep -i '^docker-content-digest:' <<<"$headers" | awk '{print $2}' | tr -d '\r')"
  [[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || fail "$host gave no valid Docker-Content-Digest for $ref (got '$digest')"
  echo "$digest"
}

# Every distinct base image, without any digest it holds now.
mapfile -t refs < <(sed -nE 's/^FROM[[:space:]]+([^[:space:]@]+)(@sha256:[0-9a-f]{64})?([[:space:]].*)?$/\1/p' "${files[@]}" | sort -u)
((${#refs[@]})) || fail "no FROM line in ${files[*]}"

declare -A digests
for ref in "${refs[@]}"; do
  digests[$ref]="$(digest_of "$ref")"
  echo "resolve-image-digests: $ref -> ${digests[$ref]}" >&2
done

for file in "${files[@]}"; do
  for ref in "${refs[@]}"; do
    escaped="$(sed 's/[][\.*^$#]/\\&/g' <<<"$ref")"
    sed -i -E "s#^FROM([[:space:]]+)$escaped(@sha256:[0-9a-f]{64})?([[:space:]]|\$)#FROM\\1$ref@${digests[$ref]}\\3#" "$file"
  done
done
echo "resolve-image-digests: wrote ${#refs[@]} digests into ${files[*]}; review with git diff and commit" >&2
