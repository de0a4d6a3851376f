# The image test's tools image: the project's image as built for this run,
# plus a developer's everyday tools (scripts/image/make-tools.sh downloads
# them once, cached by recipe), for the everyday battery. Nothing else
# changes: the same ENTRYPOINT, USER node, and again no setuid or setgid bit
# (the project image's own rule; a package may bring one).
#
#   docker build --build-arg IMAGE=clankie-separate:e2e-... \
#     --build-arg DEBS=clankie-tools-debs:bookworm -f test/image/tools.Dockerfile test/image
#
# The classic builder's syntax only (Docker 20.10 without buildx).
ARG IMAGE
ARG DEBS
FROM ${DEBS} AS debs

FROM ${IMAGE}
USER root
COPY --from=debs /debs/ /tmp/debs/
RUN set -eu; \
# apt-get, not dpkg -i: apt orders the packages by their pre-dependencies
# (python3-minimal before python3); every file is local, no mirror is asked.
    apt-get install -qq -y --no-install-recommends -o Dpkg::Use-Pty=0 /tmp/debs/*.deb >/tmp/apt.log 2>&1 || { cat /tmp/apt.log >&2; exit 1; }; \
    rm -rf /tmp/debs /tmp/apt.log /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log; \
    find / -xdev -perm /6000 \( -type f -o -type d \) -exec chmod ug-s {} +; \
    test -z "$(find / -xdev -perm /6000)"; \
    git --version; python3 --version; strace -V | head -1; rg --version | head -1
USER node
