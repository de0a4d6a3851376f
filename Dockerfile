# The body image of ADR 0272: today's node:24 image plus the root entrypoint
# (clankie-separate), the agent spawn shim (clankie-agent-exec, the same
# file), the agent uid and the workspace group. docs/launch.md says how to
# launch it.
#
#   docker build -t clankie-separate .
#       The build stage runs npm ci and node build.mjs; it needs the npm
#       registry (and a Debian mirror for binutils and tini).
#
#   node build.mjs && docker build --build-arg SEA=prebuilt -t clankie-separate .
#       Where build containers cannot reach the npm registry: the single
#       executable is built on the host and taken from the context's dist/
#       after its checksum (dist/SHA256SUMS) and version are checked.
#
#   --build-arg BASE_IMAGE=clankie-base:bookworm-node24
#       A stand-in for node:24.20.0-bookworm-slim where Docker Hub cannot be
#       reached: scripts/image/make-base.sh builds it.
#
# Both stages use the classic builder's syntax only (no BuildKit features):
# the project's CI engine is Docker 20.10 without buildx.
ARG BASE_IMAGE=node:24.20.0-bookworm-slim

# ---------------------------------------------------------------- sea --
FROM ${BASE_IMAGE} AS sea
ARG SEA=build
WORKDIR /src
COPY . .
RUN set -eu; \
    case "$SEA" in \
      build) \
        apt-get update; \
        apt-get install -y --no-install-recommends binutils; \
        npm ci --no-audit --no-fund; \
        node build.mjs ;; \
      prebuilt) \
        if [ ! -f dist/clankie-separate ] || [ ! -f dist/SHA256SUMS ]; then \
          echo "Dockerfile: SEA=prebuilt but dist/clankie-separate or dist/SHA256SUMS is missing from the context; run node build.mjs first" >&2; \
          exit 1; \
        fi; \
        (cd dist && grep '  clankie-separate$' SHA256SUMS | sha256sum --check --strict --quiet -) ;; \
      *) \
        echo "Dockerfile: SEA must be build or prebuilt, got '$SEA'" >&2; \
        exit 1 ;; \
    esac; \
    version=$(node -p 'require("./package.json").version'); \
    ./dist/clankie-separate --version >version.txt; \
    grep -qx "clankie-separate $version" version.txt; \
    grep -qx "node v24.20.0" version.txt; \
# One executable, two names: the name it is started as picks the role. A
# hard link, made here so that the final stage receives both names in one
# COPY: a link(2) or chown(2) there would copy the 109 MB file up into a
# second layer (overlayfs copies a lower file up before changing it).
    mkdir -p /out/sbin; \
    install -o root -g root -m 0755 dist/clankie-separate /out/sbin/clankie-separate; \
    ln /out/sbin/clankie-separate /out/sbin/clankie-agent-exec

# -------------------------------------------------------------- final --
FROM ${BASE_IMAGE}

COPY --from=sea /out/sbin/ /usr/local/sbin/

RUN set -eux; \
# tini is the service's init (the entrypoint runs it as node). libcap2-bin
# is here only for the capability strip below and is purged again.
    apt-get update; \
    apt-get install -y --no-install-recommends tini libcap2-bin; \
# ADR 0272's users and group. Fixed ids: /state and /workspace are volumes
# that outlive the image, and their owners are numbers.
    groupadd --gid 1001 clankie-agent; \
    useradd --uid 1001 --gid clankie-agent --home-dir /state/agent --no-create-home \
        --shell /usr/sbin/nologin clankie-agent; \
    groupadd --gid 1002 clankie-workspace; \
    usermod --append --groups clankie-workspace node; \
    usermod --append --groups clankie-workspace clankie-agent; \
# The private-job pool: clankie-private-0 .. -15, no members. A private job
# holds one for its lifetime, and only it can enter its lease directory
# (/run/clankie-private/N, made by the shim).
    for i in $(seq 0 15); do groupadd --gid $((1100 + i)) "clankie-private-$i"; done; \
    mkdir -p /state /workspace; \
    chown node:node /state /workspace; \
# File capabilities (security.capability, capabilities(7)) are what a file
# grants on execve(2) besides set-user-ID: remove every one.
    find / -xdev -type f -exec getcap {} + | while read -r file caps; do \
        echo "removing $caps from $file"; setcap -r "$file"; done; \
    test -z "$(find / -xdev -type f -exec getcap {} +)"; \
    apt-get purge -y --auto-remove libcap2-bin; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log /var/log/alternatives.log; \
# Last filesystem step: no set-user-ID or set-group-ID bit anywhere. A
# setuid binary is the one way back to root that no-new-privileges alone
# would have to block (ADR 0272, "Setuid binaries").
    find / -xdev -perm /6000 \( -type f -o -type d \) -exec chmod ug-s {} +; \
    test -z "$(find / -xdev -perm /6000)"; \
    test "$(stat -c '%U:%G %a %h %i' /usr/local/sbin/clankie-agent-exec)" = \
         "$(stat -c '%U:%G %a %h %i' /usr/local/sbin/clankie-separate)"; \
    test "$(stat -c '%U:%G %a %h' /usr/local/sbin/clankie-separate)" = "root:root 755 2"

# Started without --user 0:0 the entrypoint execs the command as given: a
# launch with today's flags is today's body, and no agent uid is configured.
ENTRYPOINT ["/usr/local/sbin/clankie-separate"]
USER node
