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

# Namespaces netcfg creates carry this alias on their `lo` (IFLA_IFALIAS;
# `ip -n NS link show lo` prints it), so a namespace the config no longer
# names can be told from one someone else made, from the kernel alone.
# Not the device group: `lo` cannot be deleted, and a delete-by-group that
# met it would fail.
NETNS_MARK = "netcfg"
