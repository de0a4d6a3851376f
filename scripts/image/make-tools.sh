#!/bin/sh
# make-tools.sh: the image test's tools base, BASE with a developer's
# everyday tools and build toolchains installed (test/image/tools.Dockerfile:
# git, python3, strace, ripgrep and kin; pip, cargo, a JDK), for the everyday
# battery. Not chromium: the battery needs what a coding agent runs every few
# minutes, and the heavy part (the toolchains: docs/benchmarks-image.md) is
# paid once per recipe, not per run: for each run the image test builds the
# project's Dockerfile on this image (BASE_IMAGE).
#
#   scripts/image/make-tools.sh BASE [IMAGE]   default IMAGE clankie-tools-base:bookworm
#
# Cached like make-base.sh: if IMAGE exists and carries this recipe's label
# (this script, tools.Dockerfile and BASE's own recipe), nothing is done.
# FORCE=1 rebuilds. Needs a Docker engine and a reachable Debian mirror
# (docker build --network host: the engine may run without a bridge).
set -eu

base=${1:?usage: make-tools.sh BASE [IMAGE]}
image=${2:-clankie-tools-base:bookworm}
here=$(cd "$(dirname "$0")" && pwd)
dockerfile="$here/../../test/image/tools.Dockerfile"

die() {
	echo "make-tools.sh: $*" >&2
	exit 1
}

command -v docker >/dev/null || die "docker is missing; apt-get install docker.io"
[ -f "$dockerfile" ] || die "$dockerfile is missing"
base_id=$(docker image inspect -f '{{.Id}}' "$base" 2>/dev/null) || die "$base does not exist; run scripts/image/make-base.sh first"
base_recipe=$(docker image inspect -f '{{index .Config.Labels "clankie.base.recipe"}}' "$base")
# A base without a recipe label (a real node:24 image) is named by its id.
recipe=$( (cat "$0" "$dockerfile"; echo "${base_recipe:-$base_id}") | sha256sum | cut -c1-16)
if [ "${FORCE:-0}" != 1 ] && [ "$(docker image inspect -f '{{index .Config.Labels "clankie.tools.recipe"}}' "$image" 2>/dev/null)" = "$recipe" ]; then
	echo "make-tools.sh: $image is current (recipe $recipe)"
	exit 0
fi

started=$(date +%s)
log=$(mktemp)
trap 'rm -f "$log"' EXIT INT TERM
DOCKER_BUILDKIT=0 docker build --network host --label "clankie.tools.recipe=$recipe" --build-arg "BASE=$base" \
	-t "$image" -f "$dockerfile" "$(dirname "$dockerfile")" >"$log" 2>&1 || { tail -40 "$log" >&2; die "docker build of $image failed"; }
size=$(docker image inspect -f '{{.Size}}' "$image")
echo "make-tools.sh: built $image in $(($(date +%s) - started)) s, $((size / 1000000)) MB (recipe $recipe)"
