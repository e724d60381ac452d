"""How netcfg marks what it owns in the kernel.

Devices we create carry IFLA_GROUP = NETCFG_GROUP, so they can be found and
removed in bulk (`ip link del group 28259`: one request, not one per device)
and told apart from devices someone else made. Routes we add carry
rtm_protocol = RTPROT_NETCFG (`ip route show proto 110`), so reading and
purging routes can be filtered in the kernel. Neither number is used by
iproute2's /etc/iproute2/{group,rt_protos} tables.
"""

NETCFG_GROUP = 0x6E63   # 28259, "nc"
RTPROT_NETCFG = 110
