#!/bin/sh
# busybox udhcpc hook: apply the lease ($ip, $mask as prefix length, $router, $dns).
case "$1" in
    deconfig)
        ip -4 addr flush dev "$interface"
        ;;
    bound|renew)
        ip -4 addr flush dev "$interface"
        ip addr add "$ip/${mask:-24}" dev "$interface"
        if [ -n "$router" ]; then
            ip route add default via "${router%% *}" dev "$interface"
        fi
        : > /etc/resolv.conf
        for server in $dns; do echo "nameserver $server" >> /etc/resolv.conf; done
        ;;
esac
exit 0
