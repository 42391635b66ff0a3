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
while read -r module; do
    insmod "/lib/modules/$module" || echo "farm-init: insmod $module failed"
done < /etc/farm/modules
ip link set lo up
for dev in /sys/class/net/*; do
    name=${dev##*/}
    [ "$name" = lo ] && continue
    ip link set "$name" up
    if udhcpc -i "$name" -s /etc/farm/udhcpc.sh -q -n -t 5 -T 1 >/dev/null 2>&1; then
        echo "farm-init: $name $(ip -4 -o addr show dev "$name" | awk '{print $4}')"
    else
        echo "farm-init: $name: no DHCP answer"
    fi
done
echo "FARM-READY kernel=$(uname -r) cpus=$(nproc)"
export HOME=/root PS1='\u@\h:\w# '
cd /root
exec setsid cttyhack /bin/sh
