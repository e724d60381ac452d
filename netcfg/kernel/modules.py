"""Loads, before the kernel is read, the modules that make devices of their
own as they load.

The kernel loads a device kind's module on the first RTM_NEWLINK that names
the kind: in the middle of a batch, after netcfg chose the ifindexes of the
batch's devices from what it read (KernelSession.new_ifindex). Some modules
then make devices themselves: every tunnel module its fallback device in
every namespace (gre0, gretap0, erspan0, tunl0, sit0, ip6tnl0...), dummy a
dummy0 and bonding a bond0 in the host's namespace. Those take the kernel's
next free indexes, or a name the batch makes (`ip link add dummy0 type dummy`
on a fresh host answers "File exists"), and a later link-add of the batch is
refused with EEXIST: the VM tier saw a gretap refused after sit, ipip and
ip6_tunnel had loaded earlier in its batch. Loaded before the read, those
devices are simply there, read like any other.

Only the kinds that declare ``module_with_devices`` are loaded here; the
others' modules make no device and load as the kernel needs them. A module
that cannot load (none built, no modprobe in a container) is left to the
link-add, whose refusal says which module is missing (apply/refusal.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable


def load_modules_with_devices(modules: Iterable[str | None]) -> None:
    """Load each named module /sys/module does not have. Asked each time, not remembered:
    a stat per module, and an administrator may unload one between two of
    netcfgd's passes. (A built-in module is in /sys/module when it has
    parameters, as all named here but ip_vti and ip6_vti do; for those two
    modprobe answers at once that they are built in.)"""
    missing = sorted({m for m in modules if m and not os.path.isdir(f"/sys/module/{m}")})
    if not missing:
        return
    modprobe = shutil.which("modprobe") or shutil.which("modprobe", path="/usr/sbin:/sbin")
    if modprobe is None:
        return
    for module in missing:   # a failure is the link-add's to report
        subprocess.run([modprobe, "-q", module], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
