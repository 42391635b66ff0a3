#!/usr/bin/env bash
# The README's promise, checked where nothing was installed by hand: a minimal Debian 12 root
# (mmdebstrap --variant=minbase, plus git, make and ca-certificates), a clone of the commit under test,
# and in a chroot: `make demo`, `farm lab up/status/down`, and the x86 twin's smoke run.
#
#   scripts/clean-root-check.sh [COMMIT]      (default HEAD; `make clean-root-check`; CI runs it)
#
# Only two files come from the host: its CA bundle and /etc/pip.conf, through which a machine of this
# workplace reaches the package registries. Everything else the commands need must come from the
# project's own files (scripts/setup.sh). Each part's time is printed; the root is removed at the end
# (FARM_KEEP_ROOT=1 keeps it, for a look inside with chroot).
#
# Cached under $FARM_CLEAN_ROOT_CACHE (default /var/cache/farm/clean-root):
# - the minbase tarball, keyed by the mmdebstrap command (a new key builds a new tarball);
# - the .deb files apt downloads inside the root, as apt's own archive cache (apt checks every file against
#   the archive's signed hashes before use, so a stale or corrupt file is fetched again, never installed).
# Nothing else is shared: the root's farm cache (~/.cache/farm) starts empty, so the build downloads the
# target packages as a new user's first build does.
set -Eeuo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
commit=$(git rev-parse --verify "${1:-HEAD}^{commit}")

[ "$(id -u)" -eq 0 ] || { echo "clean-root-check: needs root (mmdebstrap, mount, chroot)" >&2; exit 2; }
command -v mmdebstrap >/dev/null || { echo "clean-root-check: needs mmdebstrap (Debian package mmdebstrap; make setup installs it)" >&2; exit 2; }
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "clean-root-check: note: uncommitted changes are not checked, only commit ${commit:0:12}"
fi

cache=${FARM_CLEAN_ROOT_CACHE:-/var/cache/farm/clean-root}
mkdir -p "$cache/apt-archives/partial"

MMDEBSTRAP=(mmdebstrap --variant=minbase --include=git,make,ca-certificates
            bookworm - "deb http://deb.debian.org/debian bookworm main"
            "deb http://deb.debian.org/debian bookworm-updates main"
            "deb http://deb.debian.org/debian-security bookworm-security main")
key=$(printf '%s\n' "${MMDEBSTRAP[@]}" | sha256sum | cut -c1-16)
tarball="$cache/minbase-$key.tar"

t_all=$(date +%s)
current=""
t_part=0
begin() { current=$1; t_part=$(date +%s); echo "clean-root-check: --- $current"; }
end() { echo "clean-root-check: --- $current ok in $(( $(date +%s) - t_part )) s"; current=""; }
trap 'echo "clean-root-check: --- ${current:-setting up} FAILED after $(( $(date +%s) - t_part )) s" >&2' ERR

if [ -s "$tarball" ]; then
  echo "clean-root-check: minbase root from the cache ($tarball)"
else
  begin "mmdebstrap minbase bookworm"
  rm -f "$cache"/minbase-*.tar   # an old key's tarball: the command changed
  "${MMDEBSTRAP[@]}" > "$tarball.tmp" 2> "$cache/mmdebstrap.log" || { tail -20 "$cache/mmdebstrap.log" >&2; false; }
  mv "$tarball.tmp" "$tarball"
  end
fi

root=$(mktemp -d /var/tmp/farm-clean-root.XXXXXX)
mounted=()
cleanup() {
  local pid i
  for pid in /proc/[0-9]*; do  # whatever a failed part left running in the root (QEMU, sshd, labgrid)
    [ "$(readlink "$pid/root" 2>/dev/null)" = "$root" ] && kill -9 "${pid#/proc/}" 2>/dev/null
  done
  for (( i=${#mounted[@]}-1; i>=0; i-- )); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  if [ "${FARM_KEEP_ROOT:-0}" = 1 ]; then
    echo "clean-root-check: root kept in $root (chroot $root /bin/bash)"
  elif findmnt -rn -o TARGET | grep -q "^$root/"; then
    echo "clean-root-check: $root still has mounts: not removed" >&2
  else
    rm -rf --one-file-system "$root"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bind() {  # bind [--rbind|-t TYPE SRC] TARGET
  local target=$root$1; shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounted+=("$target")
}

begin "root from the tarball, clone of ${commit:0:12}"
tar -xf "$tarball" -C "$root"
install -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
[ ! -f /etc/pip.conf ] || install -m 0644 /etc/pip.conf "$root/etc/pip.conf"
bind /proc -t proc proc
bind /sys --rbind /sys
bind /dev --rbind /dev
bind /run -t tmpfs tmpfs
bind /tmp -t tmpfs tmpfs
bind /var/cache/apt/archives --bind "$cache/apt-archives"
git clone -q --no-hardlinks "$repo" "$root/root/farm"
git -C "$root/root/farm" checkout -q --detach "$commit"
end

in_root() {  # a login-like environment: nothing of the caller's but CI
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb CI="${CI:-}" /bin/bash -c "cd /root/farm && $1"
}
in_root_part() {  # in_root_part NAME COMMAND: one part, run in the root
  begin "$1"
  in_root "$2"
  end
}
in_root_part "make setup" "make setup"
in_root_part "make demo" "make demo"
in_root_part "farm lab up --boards maaxboard=1, status, down" \
  ".venv/bin/farm lab up --boards maaxboard=1 && .venv/bin/farm lab status; rc=\$?; .venv/bin/farm lab down && exit \$rc"
in_root_part "farm run pipelines/smoke.yaml --env env/qemu-x86.yaml" \
  ".venv/bin/farm run pipelines/smoke.yaml --env env/qemu-x86.yaml"
if [ "${FARM_CLEAN_ROOT_TESTS:-0}" = 1 ]; then
  in_root_part "make test" "make test"
fi
echo "clean-root-check: passed in $(( $(date +%s) - t_all )) s (commit ${commit:0:12})"
