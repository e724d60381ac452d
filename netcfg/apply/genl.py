"""The applier's side of the kinds with generic netlink state (kinds/genl.py).

Before the diff, ``prepare`` lets each such kind turn what the config
writes into what the kernel reads back (wireguard: a key file into its
public key). Before anything is written, ``refusal`` finds an operation
the read already says the kernel cannot take (link modes on a device that
is no NIC), so the apply is refused whole instead of written and reverted.
After each batch, ``configure`` hands an operation that carries a kind's
generic netlink attributes to that kind's configurer, which sends them
through pyroute2 in the device's namespace (the device exists only now).
execute.py calls these three and names no kind.

A new generic-netlink kind adds its configurer (and, if it needs them, its
preparer and refusal) here; execute.py does not change.
"""

from __future__ import annotations

from typing import Callable, Iterable

from netcfg.apply import batadv, ethtool, wireguard
from netcfg.apply.refusal import Refused
from netcfg.kernel.session import KernelSession
from netcfg.kinds.genl import genl_kinds
from netcfg.model.model import Model
from netcfg.plan.ops import Operation

# Kind name -> sends an operation's generic netlink part; returns the requests sent.
CONFIGURERS: dict[str, Callable[[Operation, KernelSession], int]] = {
    "wireguard": wireguard.configure,
    "physical": ethtool.configure,
    "batadv": batadv.configure,
}
# Model -> model, before the diff (reads what only the edge may read).
PREPARERS: tuple[Callable[[Model, KernelSession], Model], ...] = (wireguard.resolve,)
# Operation -> its refusal known from the read (None: none), before any write.
REFUSALS: tuple[Callable[[Operation, KernelSession], Refused | None], ...] = (ethtool.refusal,)


def prepare(model: Model, session: KernelSession) -> Model:
    for preparer in PREPARERS:
        model = preparer(model, session)
    return model


def refusal(ops: Iterable[Operation], session: KernelSession) -> Refused | None:
    """The first of ``ops`` the read already says the kernel cannot take."""
    for op in ops:
        for check in REFUSALS:
            refused = check(op, session)
            if refused is not None:
                return refused
    return None


def configure(op: Operation, session: KernelSession) -> int:
    """The generic netlink requests of ``op``, sent; 0 when it has none."""
    sent = 0
    for name, kind in genl_kinds().items():
        if any(a in op.params for a in kind.genl_attributes):
            sent += CONFIGURERS[name](op, session)
    return sent
