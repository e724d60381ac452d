"""The read-back of every kind with generic netlink state (kinds/genl.py).

KernelSession.read() runs each reader on each namespace read, after the
rtnetlink dumps have filled in the devices: the reader asks its family about
the devices of its kind (a GET_DEVICE dump per wireguard device, a
LINKMODES_GET per NIC) and adds what it learns to their attributes. A
namespace without such devices costs nothing, and pyroute2 is not loaded.

A new generic-netlink kind adds its reader here; session.py does not change.
"""

from __future__ import annotations

from typing import Protocol

from netcfg.kernel.ethtool import LinkModesReader
from netcfg.kernel.genl import GenlSockets
from netcfg.kernel.read import NamespaceState
from netcfg.kernel.wireguard import WireguardReader


class GenlReader(Protocol):
    kind: str    # the kind whose devices it reads

    def read(self, genl: GenlSockets, state: NamespaceState) -> int:
        """Add the family's attributes to ``state``'s devices of ``kind``;
        returns the requests made."""


READERS: tuple[GenlReader, ...] = (WireguardReader(), LinkModesReader())


def read_genl_state(genl: GenlSockets, state: NamespaceState) -> int:
    """Every reader whose kind has a device in ``state``; the requests made."""
    kinds = {obj.kind for obj in state.interfaces.values()}
    return sum(reader.read(genl, state) for reader in READERS if reader.kind in kinds)
