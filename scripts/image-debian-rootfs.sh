#!/usr/bin/env bash
# Makes (once per version of this script, cached) the Debian trixie root filesystem the stand-in
# base images start from, as a tarball, and prints its path: debootstrap --variant=minbase (the
# packages of priority required, plus apt), made like debian:trixie-slim: its apt sources
# (trixie, trixie-updates, trixie-security), its dpkg excludes (no docs but copyright files, no man
# pages, info or locales) and its apt settings. scripts/image-stand-ins.sh calls it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/image-storage.sh
images_storage_init

key="$(sha256sum scripts/image-debian-rootfs.sh | cut -c1-16)"
tarball="$images_cache/debian/trixie-minbase-$key.tar"
if [[ -f "$tarball" ]]; then echo "$tarball"; exit 0; fi
mkdir -p "$images_cache/debian"
work="$(mktemp -d "$images_cache/debian/.work.XXXXXX")"
trap 'rm -rf "$work"' EXIT

rootfs="$work/rootfs"
images_log "debootstrap --variant=minbase trixie (a few minutes, once)"
debootstrap --variant=minbase trixie "$rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 \
  || { tail -n 20 "$work/debootstrap.log" >&2; images_die "debootstrap of Debian trixie failed (log above); is http://deb.debian.org reachable?"; }
rm -f "$rootfs/etc/apt/sources.list"
cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<'SOURCES'
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie trixie-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: trixie-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
DPKG
cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
printf 'Acquire::Languages "none";\n' >"$rootfs/etc/apt/apt.conf.d/docker-no-languages"
printf 'Acquire::GzipIndexes "true";\n' >"$rootfs/etc/apt/apt.conf.d/docker-gzip-indexes"
printf 'Apt::AutoRemove::SuggestsImportant "false";\n' >"$rootfs/etc/apt/apt.conf.d/docker-autoremove-suggests"
(
  cd "$rootfs"
  find usr/share/doc -mindepth 1 ! -name copyright ! -type d -delete
  rm -rf usr/share/groff/* usr/share/info/* usr/share/linda/* usr/share/lintian/overrides/* usr/share/locale/* usr/share/man/*
  rm -rf var/cache/apt/archives/*.deb var/lib/apt/lists/* debootstrap
  : >etc/hostname
)
tar --numeric-owner --xattrs -C "$rootfs" -cf "$work/rootfs.tar" .
mv "$work/rootfs.tar" "$tarball"
# Older versions of this script made other tarballs; none is used any more.
find "$images_cache/debian" -maxdepth 1 -name 'trixie-minbase-*.tar' ! -path "$tarball" -delete
echo "$tarball"
