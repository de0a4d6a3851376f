# The image test's tools base: the base image plus a developer's everyday
# tools from Debian's mirror, for the everyday battery. scripts/image/
# make-tools.sh builds it once, cached by recipe (this file, the script and
# the base's recipe); the image test then builds the project's Dockerfile on
# it (BASE_IMAGE) as the tools image, so that the project's own steps (its
# users, no setuid or setgid bit, no file capability) hold over the tools as
# over the base, and each run pays only for the project's layers.
#
#   docker build --network host --build-arg BASE=clankie-base:bookworm-node24 \
#     -f test/image/tools.Dockerfile test/image
#
# The classic builder's syntax only (Docker 20.10 without buildx).
ARG BASE
FROM ${BASE}
USER root
# What a coding agent runs every few minutes: git, python3, strace, procps,
# psmisc, ripgrep, file, less, xz-utils.
RUN set -eu; \
    apt-get update -qq; \
    apt-get install -qq -y --no-install-recommends -o Dpkg::Use-Pty=0 git python3 strace procps psmisc ripgrep file less xz-utils >/tmp/apt.log 2>&1 || { cat /tmp/apt.log >&2; exit 1; }; \
    rm -rf /tmp/apt.log /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb /var/log/apt /var/log/dpkg.log; \
    git --version; python3 --version; strace -V | head -1; rg --version | head -1
# The build toolchains (a layer of their own, most of the image's size and
# install time: docs/benchmarks-image.md): pip with setuptools and
# wheel, cargo with rustc (and the gcc it links with), a JDK. The battery
# builds a local Python project, a cargo workspace and a Java class with
# them, offline.
RUN set -eu; \
    apt-get update -qq; \
    apt-get install -qq -y --no-install-recommends -o Dpkg::Use-Pty=0 python3-pip cargo default-jdk-headless >/tmp/apt.log 2>&1 || { cat /tmp/apt.log >&2; exit 1; }; \
    rm -rf /tmp/apt.log /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb /var/log/apt /var/log/dpkg.log; \
    python3 -m pip --version; cargo --version; rustc --version; javac -version
