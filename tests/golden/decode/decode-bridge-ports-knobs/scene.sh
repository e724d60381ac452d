ip link add br0 type bridge forward_delay 400 stp_state 0 hello_time 300 max_age 2500 ageing_time 10000 priority 4096
ip link add d0 type veth peer name d0p
ip link add d1 type veth peer name d1p
ip link set d0 master br0
ip link set d1 master br0
ip link set dev d1 type bridge_slave cost 50 priority 20
ip link set br0 mtu 1400
ip address add 192.0.2.1/24 dev br0
ip address add 2001:db8::1/64 dev br0 nodad
ip link set d0 up
ip link set d1 up
ip link set br0 up
ip route add 198.51.100.0/24 via 192.0.2.254 dev br0 proto 110
