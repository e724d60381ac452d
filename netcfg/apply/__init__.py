"""Writing a plan to the kernel: execute, read back, revert (``execute``),
apply --confirm's trial (``confirm``), the apply lock (``lock``) and the DHCP
clients netcfg starts (``dhcp``).
"""
