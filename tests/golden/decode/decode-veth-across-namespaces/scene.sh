ip netns add tenant1
ip link add vh1 type veth peer name vt1 netns tenant1
ip address add 10.1.0.1/30 dev vh1
ip link set vh1 up
ip -n tenant1 address add 10.1.0.2/30 dev vt1
ip -n tenant1 address add 2001:db8:1::2/64 dev vt1 nodad
ip -n tenant1 link set vt1 up
ip -n tenant1 link set lo up
ip -n tenant1 route add default via 10.1.0.1 dev vt1 proto 110
ip -n tenant1 route add 2001:db8:99::/48 via 2001:db8:1::1 dev vt1 proto 110
ip route add 10.100.0.0/16 via 10.1.0.2 dev vh1 metric 50 proto 110
ip link add va type veth peer name vb
ip address add 10.2.0.1/31 dev va
ip link set va mtu 9000
