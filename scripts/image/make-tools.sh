#!/bin/sh
# make-tools.sh: the Debian packages of a developer's everyday tools, for the
# image test's tools image (test/image/tools.Dockerfile): git, python3,
# strace, procps, psmisc, ripgrep, file, less, xz-utils. Not chromium or a
# compiler: the battery needs what a coding agent runs every few minutes,
# and CI pays for every megabyte on every run.
#
# The result is an image that holds only /debs (the .deb files and their
# dependencies, resolved against BASE), so that the tools image built on top
# of each run's project image installs them with dpkg, without the mirror.
#
#   scripts/image/make-tools.sh BASE [IMAGE]   default IMAGE clankie-tools-debs:bookworm
#
# Cached like make-base.sh: if IMAGE exists and carries this recipe's label
# (this script and BASE's own recipe), nothing is done. FORCE=1 rebuilds.
# Needs a Docker engine and a reachable Debian mirror (docker build
# --network host: the engine may run without a bridge).
set -eu

base=${1:?usage: make-tools.sh BASE [IMAGE]}
image=${2:-clankie-tools-debs:bookworm}
packages="git python3 strace procps psmisc ripgrep file less xz-utils"

die() {
	echo "make-tools.sh: $*" >&2
	exit 1
}

command -v docker >/dev/null || die "docker is missing; apt-get install docker.io"
base_id=$(docker image inspect -f '{{.Id}}' "$base" 2>/dev/null) || die "$base does not exist; run scripts/image/make-base.sh first"
base_recipe=$(docker image inspect -f '{{index .Config.Labels "clankie.base.recipe"}}' "$base")
# A base without a recipe label (a real node:24 image) is named by its id.
recipe=$( (cat "$0"; echo "${base_recipe:-$base_id}") | sha256sum | cut -c1-16)
if [ "${FORCE:-0}" != 1 ] && [ "$(docker image inspect -f '{{index .Config.Labels "clankie.tools.recipe"}}' "$image" 2>/dev/null)" = "$recipe" ]; then
	echo "make-tools.sh: $image is current (recipe $recipe)"
	exit 0
fi

started=$(date +%s)
# apt-get --download-only resolves against BASE's dpkg status: what the
# project image adds later (tini) does not change the set.
DOCKER_BUILDKIT=0 docker build --quiet --network host --label "clankie.tools.recipe=$recipe" -t "$image" - >/dev/null <<EOF || die "docker build of $image failed"
FROM $base
RUN set -eu; \
    apt-get update -qq; \
    mkdir -p /debs/partial; \
    apt-get install -qq -y --no-install-recommends --download-only -o Dir::Cache::archives=/debs $packages >/dev/null; \
    rm -rf /debs/partial /debs/lock /var/lib/apt/lists/*; \
    ls /debs/*.deb >/dev/null
EOF
size=$(docker run --rm --network none "$image" du -sm /debs | cut -f1)
echo "make-tools.sh: built $image in $(($(date +%s) - started)) s, $size MB of packages (recipe $recipe)"
