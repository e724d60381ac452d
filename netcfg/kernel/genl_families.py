"""The read-back of every kind with generic netlink state (kinds/genl.py).

KernelSession.read() runs each reader on each namespace read, after the
rtnetlink dumps have filled in the devices: the reader asks its family about
the devices of its kind (a GET_DEVICE dump per wireguard device, a
LINKMODES_GET per NIC) and adds what it learns to their attributes. A
namespace without such devices costs nothing, and pyroute2 is not loaded.

A read made to compare with a config (apply, query --check, ifquery -c:
``desired`` given) asks a reader marked ``only_where_written`` only about
the devices that config writes its kind's attributes on. NICs' link modes
are such: hardware settings netcfg never creates nor deletes, so neither
the diff (it leaves alone what a config does not write) nor a revert (it
undoes only what the apply changed) needs them elsewhere, and asking cost
every Proxmox poll pyroute2's import (0.12-0.43 s) and 0.4-1 ms per NIC.
`show` (``desired`` None) still reads them all. WireGuard's reader is not
marked: a revert that re-creates a wireguard device the config dropped
needs the keys it had, and a namespace without one costs nothing anyway.

A new generic-netlink kind adds its reader here; session.py does not change.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from netcfg.kernel.batadv import BatadvReader
from netcfg.kernel.ethtool import LinkModesReader
from netcfg.kernel.genl import GenlSockets
from netcfg.kernel.read import NamespaceState
from netcfg.kernel.wireguard import WireguardReader
from netcfg.kinds.genl import genl_kinds
from netcfg.model.model import Model


class GenlReader(Protocol):
    kind: str    # the kind whose devices it reads
    # For a read compared with a config, ask only the devices the config
    # writes this kind's attributes on.
    only_where_written: bool

    def read(self, genl: GenlSockets, state: NamespaceState) -> int:
        """Add the family's attributes to ``state``'s devices of ``kind``;
        returns the requests made."""


READERS: tuple[GenlReader, ...] = (WireguardReader(), LinkModesReader(), BatadvReader())


def read_genl_state(genl: GenlSockets, state: NamespaceState,
                    desired: Model | None = None) -> int:
    """Every reader whose kind has a device in ``state``; the requests made.
    ``desired``: the config the read is compared with (None: `show`, all)."""
    kinds = {obj.kind for obj in state.interfaces.values()}
    asked = 0
    for reader in READERS:
        if reader.kind not in kinds:
            continue
        if desired is not None and reader.only_where_written:
            scoped = written_only(state, desired, reader.kind)
            if scoped.interfaces:
                asked += reader.read(genl, scoped)
        else:
            asked += reader.read(genl, state)
    return asked


def written_only(state: NamespaceState, desired: Model, kind: str) -> NamespaceState:
    """``state`` seen with only its devices of ``kind`` that ``desired``
    writes one of that kind's generic netlink attributes on (the same
    objects: what a reader adds to them lands in the read)."""
    attributes = genl_kinds()[kind].genl_attributes
    wanted = {}
    for name, obj in state.interfaces.items():
        config = desired.interfaces.get((state.netns, name))
        if obj.kind == kind and config is not None and any(a in config.attrs
                                                           for a in attributes):
            wanted[name] = obj
    return dataclasses.replace(state, interfaces=wanted)
