"""The /etc/network/if-{pre-up,up,post-up,pre-down,down,post-down}.d scripts:
which of them run, as ifupdown2 picks them (research/ifupdown2-dropin.md
sections 0.9 and 2.6).

ifupdown2 runs every file of the phase's directory, in sorted name order
(run-parts' order), except:

- a name equal to one of its addon modules, or to a script an addon says it
  replaces (the bond addon replaces `ifenslave`): those scripts come from
  packages (bridge-utils' `bridge`, vlan's `vlan`, ifenslave's, openvswitch's,
  ethtool's, Proxmox's `mtu`, `bridgevlan`, `bridgevlanport`) that would
  configure the interface a second time, on top of what netcfg wrote;
- `*.dpkg-old`, `*.dpkg-new`, `*.dpkg-dist`, `*.dpkg-tmp` (Proxmox's patch
  pve/0010, upstream PR #304): the leftovers of a package upgrade;
- anything that is not an executable regular file.
"""

from __future__ import annotations

import os
import stat

# ifupdown2's addons (etc/network/ifupdown2/addons.conf, upstream and 3.x),
# the scripts they replace (bond: ifenslave), and the dummy modules Proxmox's
# fork adds to shadow pve-manager's own hooks (pve/0002: mtu, bridgevlanport).
BUILT_IN_HANDLERS = frozenset({
    "address", "addressvirtual", "auto", "batman_adv", "bond", "bridge", "bridgevlan",
    "bridgevlanport", "clagd", "dhcp", "ethtool", "ifenslave", "link", "loopback", "mstpctl",
    "mtu", "openvswitch", "openvswitch_port", "ppp", "tunnel", "usercmds", "vlan", "vrf",
    "vrrpd", "vxlan", "vxrd", "xfrm",
})
PHASE_DIRECTORIES = {phase: f"if-{phase}.d" for phase in
                     ("pre-up", "up", "post-up", "pre-down", "down", "post-down")}


def skipped_because(name: str) -> str | None:
    """Why a script of this name is not run, or None."""
    if name in BUILT_IN_HANDLERS:
        return "netcfg does what this handler would (ifupdown2 skips it too)"
    if ".dpkg-" in name:
        return "a package manager's leftover"
    if name.startswith("."):
        return "a hidden file"
    return None


def scripts_for(network_dir: str, phase: str) -> list[str]:
    """Paths of the scripts of ``phase`` that run, in the order they run."""
    directory = os.path.join(network_dir, PHASE_DIRECTORIES[phase])
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []   # no such directory: no scripts (as ifupdown2)
    out = []
    for name in names:
        if skipped_because(name) is not None:
            continue
        path = os.path.join(directory, name)
        try:
            info = os.stat(path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and os.access(path, os.X_OK):
            out.append(path)
    return out


class ScriptDirectory:
    """The scripts of one apply, listed once per phase (an apply brings many
    interfaces up; the directories do not change under it)."""

    def __init__(self, network_dir: str):
        self.network_dir = network_dir
        self._by_phase: dict[str, list[str]] = {}

    def scripts(self, phase: str) -> list[str]:
        if phase not in self._by_phase:
            self._by_phase[phase] = scripts_for(self.network_dir, phase)
        return self._by_phase[phase]
