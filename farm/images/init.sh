#!/bin/busybox sh
# /init of a farm benchmark image: mount, load the kernel modules the board needs (Debian builds its
# NIC drivers as modules), bring every ethernet interface up with DHCP, print the ready marker, and
# hand the console a shell. Everything it prints starts with "farm-init:" so logs are easy to read.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
hostname farm-target
uptime() { read -r up _ < /proc/uptime; echo "$up"; }
echo "farm-init: start at $(uptime)s"
while read -r module; do
    insmod "/lib/modules/$module" || echo "farm-init: insmod $module failed"
done < /etc/farm/modules
echo "farm-init: modules loaded at $(uptime)s"
ip link set lo up
# farm.ip=ADDR:NETMASK:GATEWAY is the bootloader's DHCP lease (U-Boot, iPXE), passed on so that Linux
# need not ask again. It goes to the interface whose MAC is farm.mac=, else to the first one (U-Boot
# may use an ethaddr of its own, as QEMU's does).
lease=$(sed -n 's/.*farm\.ip=\([0-9.]*:[0-9.]*:[0-9.]*\).*/\1/p' /proc/cmdline)
mac=$(sed -n 's/.*farm\.mac=\([0-9a-fA-F:]*\).*/\1/p' /proc/cmdline | tr A-F a-f)
leased=""
for dev in /sys/class/net/*; do
    name=${dev##*/}
    [ "$name" = lo ] && continue
    [ -z "$leased" ] && leased=$name
    if [ -n "$mac" ] && [ "$(cat "$dev/address")" = "$mac" ]; then leased=$name; break; fi
done
for dev in /sys/class/net/*; do
    name=${dev##*/}
    [ "$name" = lo ] && continue
    ip link set "$name" up
    addr=${lease%%:*}; rest=${lease#*:}; mask=${rest%%:*}; gw=${rest#*:}
    if [ "$name" = "$leased" ] && [ -n "$addr" ] && [ -n "$mask" ]; then
        eval "$(ipcalc -p "$addr" "$mask")"
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
echo "farm-init: network up at $(uptime)s"
echo "FARM-READY kernel=$(uname -r) cpus=$(nproc) uptime=$(uptime)s"
export HOME=/root PS1='\u@\h:\w# '
cd /root
exec setsid cttyhack /bin/sh
