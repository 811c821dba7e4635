#!/usr/bin/env bash
# Builds the PostgreSQL and Redis images that compose.yaml runs beside Gatehouse (docs/deployment.md#compose,
# docs/adr/0050-image-from-debian-and-npm-and-opt-in-traces.md), the way deploy/image/build.sh builds Gatehouse's: a
# root extracted by mmdebstrap from Debian's packages (no maintainer script run, nothing from a container registry),
# pruned of what the server never runs (perl, LLVM's JIT, translations, docs), then FROM scratch with ADD/COPY only.
#   - PostgreSQL 15 (Debian bookworm's), user postgres (10002), data in /var/lib/postgresql/data; the entrypoint
#     (postgres-entrypoint.sh, the one shell script) honours POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB.
#   - Redis 7.0 (bookworm's), user redis (10003), no shell at all: the server is the entrypoint.
# Each root is cached under $GATEHOUSE_IMAGE_CACHE (as build.sh's base), keyed by its packages and the pruning; a
# rebuild is two `podman build`s of cached layers. REFRESH_BASE=1 makes the roots again (Debian's security updates).
# Usage: deploy/image/build-services.sh [postgres tag] [redis tag]
#        (default localhost/gatehouse-postgres:dev and localhost/gatehouse-redis:dev)
set -euo pipefail
cd "$(dirname "$0")/../.."
POSTGRES_TAG=${1:-localhost/gatehouse-postgres:dev}
REDIS_TAG=${2:-localhost/gatehouse-redis:dev}
SUITE=${DEBIAN_SUITE:-bookworm}
PG_MAJOR=15
CACHE=${GATEHOUSE_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse-image}
POSTGRES_UID=10002
REDIS_UID=10003
for tool in podman mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "build-services.sh needs $tool (apt-get install podman mmdebstrap)" >&2 && exit 1; }
done
mkdir -p "$CACHE"
log() { printf '=== services: %s\n' "$*"; }
started=$SECONDS

# What the extract variant leaves that no server here runs: the dependencies' perl and debconf (maintainer scripts are
# never run), LLVM (PostgreSQL's JIT, off when its library is missing), translations, locale sources and docs.
prune() { # $1 root
  local root=$1
  rm -rf "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/info "$root"/usr/share/lintian \
    "$root"/usr/share/locale "$root"/usr/share/i18n "$root"/usr/share/perl "$root"/usr/share/perl5 \
    "$root"/usr/lib/x86_64-linux-gnu/perl "$root"/usr/lib/x86_64-linux-gnu/perl-base "$root"/usr/lib/aarch64-linux-gnu/perl \
    "$root"/usr/lib/aarch64-linux-gnu/perl-base "$root"/usr/lib/*-linux-gnu/libperl.so* "$root"/usr/bin/perl* \
    "$root"/usr/lib/*-linux-gnu/libLLVM* "$root"/usr/lib/*-linux-gnu/libz3.so* \
    "$root"/usr/lib/postgresql/*/lib/llvmjit* "$root"/usr/lib/postgresql/*/lib/bitcode \
    "$root"/var/cache/* "$root"/var/lib/apt "$root"/var/lib/dpkg "$root"/var/log/* "$root"/dev/*
  # postgresql-common's wrappers are perl: the server's own tools are on PATH instead (the Containerfile).
  find "$root"/usr/bin -lname '*pg_wrapper' -delete
  mkdir -p "$root/tmp" "$root/run" && chmod 1777 "$root/tmp"
  ln -sfn /run "$root/var/run"
}

# $1 name, $2 packages (comma-separated), $3 uid, $4 home: the cached root's tar, made when missing.
root_tar() {
  local name=$1 packages=$2 uid=$3 home=$4
  local tar
  tar="$CACHE/$name-$SUITE-$( (echo "$packages $uid $home"; declare -f prune) | sha256sum | cut -c1-12).tar"
  if [ ! -s "$tar" ] || [ "${REFRESH_BASE:-0}" = 1 ]; then
    log "Debian $SUITE root for $name (mmdebstrap: $packages)" >&2
    local root
    root=$(mktemp -d "$CACHE/.$name.XXXXXX")
    mmdebstrap --quiet --format=directory --variant=extract --include="$packages" --components=main "$SUITE" "$root"
    prune "$root"
    printf 'root:x:0:0:root:/root:/usr/sbin/nologin\n%s:x:%s:%s:%s:%s:/usr/sbin/nologin\n' \
      "$name" "$uid" "$uid" "$name" "$home" >"$root/etc/passwd"
    printf 'root:x:0:\n%s:x:%s:\n' "$name" "$uid" >"$root/etc/group"
    chmod 644 "$root/etc/passwd" "$root/etc/group"
    tar --numeric-owner --sort=name -C "$root" -cf "$tar.tmp" .
    rm -rf "$root"
    mv "$tar.tmp" "$tar"
  fi
  echo "$tar"
}

# $1 tag, $2 Containerfile, $3 root tar, then the files to copy into the context; the writable folders the
# Containerfile chowns are made empty in the context (a build needs no container runtime, as build.sh's).
build() {
  local tag=$1 containerfile=$2 tar=$3
  shift 3
  local context
  context=$(mktemp -d "$CACHE/.context.XXXXXX")
  ln "$tar" "$context/root.tar" 2>/dev/null || cp "$tar" "$context/root.tar"
  if [ $# -gt 0 ]; then cp "$@" "$context/"; fi
  mkdir -m 700 "$context/data" && mkdir -m 2775 "$context/run"
  log "podman build $tag"
  podman build --quiet --layers -f "$containerfile" -t "$tag" "$context" >/dev/null
  rm -rf "$context"
  log "$tag: $(($(podman image inspect "$tag" --format '{{.Size}}') / 1000000)) MB"
}

postgres_root=$(root_tar postgres "postgresql-$PG_MAJOR,dash" "$POSTGRES_UID" /var/lib/postgresql)
build "$POSTGRES_TAG" deploy/image/postgres.Containerfile "$postgres_root" deploy/image/postgres-entrypoint.sh
redis_root=$(root_tar redis redis-server "$REDIS_UID" /data)
build "$REDIS_TAG" deploy/image/redis.Containerfile "$redis_root"
log "built in $((SECONDS - started)) s"
