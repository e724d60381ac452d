"""ifupdown2's commands (`ifup`, `ifdown`, `ifreload`, `ifquery`) over netcfg's engine.

Proxmox VE, networking.service, udev hotplug and Debian's packages call these
four commands by name; this package answers them with ifupdown2's flags,
output formats and exit codes, so a host switches without changing what
calls it (docs/ifupdown.md). The config is /etc/network/interfaces; the work
is netcfg's: compile, diff against the kernel, apply, verify, revert.
"""
