#!/usr/bin/env bash
# Builds the Gatehouse OCI image with podman from parts this machine gets from its two registries
# (docs/deployment.md#image, docs/adr/0050-image-from-debian-and-npm-and-opt-in-traces.md):
#   - a Debian base made by mmdebstrap from Debian's packages: only libc6, libstdc++6, libgcc-s1, tzdata,
#     base-files and netbase, extracted (no shell, no package manager), plus the gatehouse user (10001);
#   - Node from the npm registry's node-linux-<arch> package (bin/node only; include/node builds better-sqlite3);
#   - the app: `npm run build` (dist/, the console included) and the production node_modules, built against that
#     Node's headers.
# Each part is cached under $GATEHOUSE_IMAGE_CACHE (default ~/.cache/gatehouse-image), keyed by what makes it:
# a rebuild after a code change only rebuilds dist/ and the last layer. REFRESH_BASE=1 makes the base again (Debian's
# security updates). Usage: deploy/image/build.sh [tag]   (default localhost/gatehouse:dev)
set -euo pipefail
cd "$(dirname "$0")/../.."
TAG=${1:-localhost/gatehouse:dev}
NODE_VERSION=${NODE_VERSION:-24.21.0}
SUITE=${DEBIAN_SUITE:-bookworm}
CACHE=${GATEHOUSE_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse-image}
APP_UID=10001
case "$(uname -m)" in
  x86_64) ARCH=x64 ;;
  aarch64 | arm64) ARCH=arm64 ;;
  *) echo "no node-linux package for $(uname -m)" >&2 && exit 1 ;;
esac
for tool in podman mmdebstrap npm; do
  command -v "$tool" >/dev/null || { echo "build.sh needs $tool (apt-get install podman mmdebstrap)" >&2 && exit 1; }
done
mkdir -p "$CACHE"
log() { printf '=== image: %s\n' "$*"; }
started=$SECONDS

# 1. Node from the npm registry.
NODE_DIR="$CACHE/node-v$NODE_VERSION-linux-$ARCH"
if [ ! -x "$NODE_DIR/bin/node" ] || [ ! -f "$NODE_DIR/include/node/node.h" ]; then
  log "Node $NODE_VERSION (npm package node-linux-$ARCH)"
  tmp=$(mktemp -d "$CACHE/.node.XXXXXX")
  (cd "$tmp" && npm pack --silent "node-linux-$ARCH@$NODE_VERSION" >/dev/null)
  mkdir "$tmp/node"
  tar -xzf "$tmp/node-linux-$ARCH-$NODE_VERSION.tgz" -C "$tmp/node" --strip-components=1
  rm -rf "$NODE_DIR" && mv "$tmp/node" "$NODE_DIR" && rm -rf "$tmp"
fi

# 2. The Debian base: extracted packages, no maintainer scripts, nothing to run them with.
PACKAGES=libc6,libstdc++6,libgcc-s1,tzdata,base-files,netbase
BASE="$CACHE/base-$SUITE-$(echo "$PACKAGES $APP_UID" | sha256sum | cut -c1-12).tar"
if [ ! -s "$BASE" ] || [ "${REFRESH_BASE:-0}" = 1 ]; then
  log "Debian $SUITE base (mmdebstrap: $PACKAGES)"
  root=$(mktemp -d "$CACHE/.base.XXXXXX")
  mmdebstrap --quiet --format=directory --variant=extract --include="$PACKAGES" --components=main "$SUITE" "$root"
  # The extract variant runs no hook and no maintainer script: what they would have done, done here.
  rm -rf "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/info "$root"/usr/share/lintian \
    "$root"/var/cache/* "$root"/var/lib/apt "$root"/var/log/* "$root"/dev/*
  printf 'root:x:0:0:root:/root:/usr/sbin/nologin\ngatehouse:x:%s:%s:Gatehouse:/data:/usr/sbin/nologin\n' \
    "$APP_UID" "$APP_UID" >"$root/etc/passwd"
  printf 'root:x:0:\ngatehouse:x:%s:\n' "$APP_UID" >"$root/etc/group"
  chmod 644 "$root/etc/passwd" "$root/etc/group"
  mkdir -p "$root/tmp" && chmod 1777 "$root/tmp"
  tar --numeric-owner --sort=name -C "$root" -cf "$BASE.tmp" .
  rm -rf "$root"
  mv "$BASE.tmp" "$BASE"
fi

# 3. The production node_modules, once per lock file and Node version: better-sqlite3 is compiled here.
MODULES="$CACHE/modules-$( (cat package-lock.json; echo "$NODE_VERSION $ARCH") | sha256sum | cut -c1-16)"
if [ ! -d "$MODULES/node_modules" ]; then
  log "production node_modules (better-sqlite3 against Node $NODE_VERSION's headers)"
  tmp=$(mktemp -d "$CACHE/.modules.XXXXXX")
  cp package.json package-lock.json "$tmp/"
  (
    cd "$tmp"
    PATH="$NODE_DIR/bin:$PATH" npm_config_nodedir="$NODE_DIR" JOBS=max \
      npm ci --omit=dev --omit=optional --no-audit --no-fund --loglevel=error
    # What only the compiler needed, and what nothing reads at run time.
    rm -rf node_modules/better-sqlite3/deps node_modules/better-sqlite3/src node_modules/better-sqlite3/build/Release/obj.target \
      node_modules/better-sqlite3/build/Release/.deps node_modules/better-sqlite3/build/deps node_modules/.package-lock.json
    # better-sqlite3's prebuilt binaries of other systems (the one for this Node and system stays).
    find node_modules/better-sqlite3/prebuilds -type f ! -name "linux-$ARCH.node" -delete 2>/dev/null || true
    find node_modules \( -name '*.md' -o -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -type f -delete
  )
  rm -rf "$MODULES" && mv "$tmp" "$MODULES"
fi

# 4. The app, built from this checkout.
log "npm run build"
npm run build --silent >/dev/null
CONTEXT="$CACHE/context"
rm -rf "$CONTEXT" && mkdir -p "$CONTEXT/app" "$CONTEXT/data"
cp "$NODE_DIR/bin/node" "$CONTEXT/node"
cp "$BASE" "$CONTEXT/base.tar"
cp -a package.json "$CONTEXT/app/"
cp -a dist "$CONTEXT/app/dist"
find "$CONTEXT/app/dist" -name '*.map' -type f -delete
cp -al "$MODULES/node_modules" "$CONTEXT/app/node_modules" 2>/dev/null || cp -a "$MODULES/node_modules" "$CONTEXT/app/node_modules"

log "podman build $TAG"
podman build --quiet --layers -f deploy/image/Containerfile -t "$TAG" "$CONTEXT" >/dev/null
size=$(podman image inspect "$TAG" --format '{{.Size}}')
log "$TAG: $((size / 1000000)) MB, built in $((SECONDS - started)) s"
