#!/bin/busybox sh
# /init of a farm benchmark image: mount, load the kernel modules the board needs (Debian builds its
# NIC drivers as modules), bring every ethernet interface up with DHCP, print the ready marker, and
# hand the console a shell. Everything it prints starts with "farm-init:" so logs are easy to read.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
# the kernel's rootfs starts world-writable (1777), which a careful program refuses to trust (DPDK's EAL:
# "Cannot init plugins"); /var/run is where daemons (DPDK's runtime directory) expect /run
/bin/busybox chmod 755 /
[ -e /var/run ] || /bin/busybox ln -s /run /var/run
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
# Every process this script starts costs milliseconds on a slow CPU (tens under the twins' TCG), so what
# the shell can do itself it does: builtins and parameter expansion instead of sed, tr, cat and ipcalc.
echo farm-target > /proc/sys/kernel/hostname
uptime() { read -r up _ < /proc/uptime; }  # sets $up
uptime; echo "farm-init: start at ${up}s"
while read -r module; do
    insmod "/lib/modules/$module" || echo "farm-init: insmod $module failed"
done < /etc/farm/modules
uptime; echo "farm-init: modules loaded at ${up}s"
ip link set lo up
# farm.ip=ADDR:NETMASK:GATEWAY is the bootloader's DHCP lease (U-Boot, iPXE), passed on so that Linux
# need not ask again. It goes to the interface whose MAC is farm.mac=, else to the first one (U-Boot
# may use an ethaddr of its own, as QEMU's does).
lease=""; mac=""
read -r cmdline < /proc/cmdline
set -f  # the words of the command line, not file names they might match
for arg in $cmdline; do
    case "$arg" in
        farm.ip=*:*:*) lease=${arg#farm.ip=} ;;
        farm.mac=*) mac=${arg#farm.mac=} ;;
    esac
done
set +f
case "$mac" in *[A-F]*) mac=$(echo "$mac" | tr A-F a-f) ;; esac  # sysfs writes MACs in lower case
# the prefix length of a dotted netmask (255.255.255.0 -> 24)
prefix_of() {
    PREFIX=0; old_ifs=$IFS; IFS=.; set -- $1; IFS=$old_ifs
    for octet; do
        case "$octet" in
            255) PREFIX=$((PREFIX + 8)) ;; 254) PREFIX=$((PREFIX + 7)) ;; 252) PREFIX=$((PREFIX + 6)) ;;
            248) PREFIX=$((PREFIX + 5)) ;; 240) PREFIX=$((PREFIX + 4)) ;; 224) PREFIX=$((PREFIX + 3)) ;;
            192) PREFIX=$((PREFIX + 2)) ;; 128) PREFIX=$((PREFIX + 1)) ;;
        esac
    done
}
leased=""
for dev in /sys/class/net/*; do
    name=${dev##*/}
    [ "$name" = lo ] && continue
    [ -z "$leased" ] && leased=$name
    read -r address < "$dev/address"
    if [ -n "$mac" ] && [ "$address" = "$mac" ]; then leased=$name; break; fi
done
for dev in /sys/class/net/*; do
    name=${dev##*/}
    [ "$name" = lo ] && continue
    ip link set "$name" up
    addr=${lease%%:*}; rest=${lease#*:}; mask=${rest%%:*}; gw=${rest#*:}
    if [ "$name" = "$leased" ] && [ -n "$addr" ] && [ -n "$mask" ]; then
        prefix_of "$mask"
        ip addr add "$addr/$PREFIX" dev "$name"
        [ -n "$gw" ] && [ "$gw" != 0.0.0.0 ] && ip route add default via "$gw" dev "$name"
        # announce the address (gratuitous ARP): neighbours that saw the bootloader learn it is ours now
        arping -U -c 1 -w 1 -I "$name" "$addr" >/dev/null 2>&1
        echo "farm-init: $name $addr/$PREFIX (lease from the bootloader)"
    elif [ -z "$addr" ] && udhcpc -i "$name" -s /etc/farm/udhcpc.sh -q -n -t 5 -T 1 >/dev/null 2>&1; then
        echo "farm-init: $name $(ip -4 -o addr show dev "$name" | awk '{print $4}') (DHCP)"
    else
        echo "farm-init: $name up, no address"
    fi
done
uptime; echo "farm-init: network up at ${up}s"
read -r release < /proc/sys/kernel/osrelease
uptime; echo "FARM-READY kernel=$release cpus=$(nproc) uptime=${up}s"
export HOME=/root PS1='\u@\h:\w# '
cd /root
exec setsid cttyhack /bin/sh
