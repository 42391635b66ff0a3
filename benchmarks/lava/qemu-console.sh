#!/bin/sh
# LAVA's connection command for the MaaXBoard twin (device.yaml: commands.connections.uart0.connect).
# Connecting starts the twin: QEMU with its serial console on stdio, the same machine as farm's twin,
# TFTP served by QEMU's user-mode network from LAVA's TFTP directory. The pid goes to $2 so that
# LAVA's power_off command and benchmarks/run.py can stop exactly this QEMU.
# usage: qemu-console.sh TFTP_ROOT PIDFILE
set -e
echo $$ > "$2"
exec qemu-system-aarch64 -machine virt -cpu cortex-a53 -smp 4 -m 1G \
    -bios /usr/lib/u-boot/qemu_arm64/u-boot.bin \
    -nic "user,model=virtio-net-pci,tftp=$1" -nographic
