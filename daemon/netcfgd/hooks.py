"""Per-namespace lifecycle hooks: where services that live inside a tenant
namespace (the embedded iSCSI target, netcfgd.dataplane) attach.

``configured(name)``: the namespace exists and a pass has made it equal to
the config (first time, or again after it was re-created): start listeners
there. ``removing(name)``: the namespace is about to be removed by netcfgd,
or was deleted from outside: stop what runs in it and close its sockets, so
the kernel can free it. The default implementation only logs; the daemon
takes a subclass (or any object with these two methods).
"""

from __future__ import annotations

import logging


class NamespaceHooks:
    def __init__(self, log: logging.Logger):
        self.log = log

    def configured(self, name: str) -> None:
        self.log.debug(f"{'netns ' + name if name else 'host'}: configured",
                       extra={"NETCFG_NETNS": name})

    def removing(self, name: str) -> None:
        self.log.debug(f"netns {name}: going away", extra={"NETCFG_NETNS": name})
