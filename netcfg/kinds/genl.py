"""Kinds whose settings live in a generic netlink family, not rtnetlink.

A WireGuard device is created by rtnetlink but its keys and peers are
WG_CMD_SET_DEVICE's; a NIC's speed is ethtool's LINKMODES_SET. Such a kind
subclasses ``GenlState`` and names the attributes that family carries (the
family itself is named where it is spoken: kernel/wireguard.py, kernel/ethtool.py).
Three places then know the kind by name, and nothing else does:

- netlink/encode.py leaves these attributes out of rtnetlink requests
  (``genl_attributes()``), and creates the kind with no IFLA_INFO_DATA;
- kernel/genl_families.py lists the kind's reader (read-back for the diff);
- apply/genl.py lists its configurer (the writes, after the batch).

A second generic-netlink kind adds its module here and one line in each of
the two lists; session.py, execute.py and encode.py do not change.
"""

from __future__ import annotations

from functools import cache

from netcfg.kinds import registry


class GenlState:
    """Mixin of a kind with state in a generic netlink family."""

    # The attributes set and read over that family, never over rtnetlink.
    genl_attributes: tuple[str, ...] = ()


@cache
def genl_kinds() -> dict[str, GenlState]:
    """Kind name -> kind, of the kinds with generic netlink state."""
    return {k.name: k for k in registry.kinds() if isinstance(k, GenlState)}


@cache
def genl_attributes() -> frozenset[str]:
    """Every attribute a generic netlink family carries (rtnetlink skips them)."""
    return frozenset(a for k in genl_kinds().values() for a in k.genl_attributes)


@cache
def created_without_info_data() -> frozenset[str]:
    """Creatable kinds whose create request has no IFLA_INFO_DATA: all their
    own settings come after, over their family (wireguard)."""
    return frozenset(name for name, k in genl_kinds().items() if k.creatable)
