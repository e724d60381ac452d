ip link add up0 type veth peer name up0p
ip link set up0 up
ip address add 203.0.113.1/24 dev up0
ip link add vx100 type vxlan id 100 local 203.0.113.1 dstport 4789 dev up0 ttl 64 nolearning
bridge fdb append 00:00:00:00:00:00 dev vx100 dst 203.0.113.2
bridge fdb append 00:00:00:00:00:00 dev vx100 dst 203.0.113.3
ip link add mv0 link up0 type macvlan mode bridge
ip link add mv1 link up0 type macvlan mode private
ip address add 203.0.113.10/24 dev mv0
ip link set vx100 up
ip link set mv0 up
ip route add 100.64.0.0/10 dev mv0 proto 110
