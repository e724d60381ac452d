"""Per-namespace lifecycle hooks: where services that live inside a tenant
namespace (the embedded iSCSI target, netcfgd.dataplane) attach.

``configured(name)``: the namespace exists and a pass has made it equal to
the config (first time, or again after it was re-created): start listeners
there. ``removing(name)``: the namespace is about to be removed by netcfgd,
or was deleted from outside: stop what runs in it and close its sockets, so
the kernel can free it. ``load(model)``: a config was loaded;
``after_pass()``: a reconcile pass ended; ``status_json()``: what `netcfg
status` shows of the service; ``close()``: the daemon stops. The default
implementation only logs; netcfgd runs netcfgd.storage.StorageHooks.
"""

from __future__ import annotations

import logging
from typing import Any


class NamespaceHooks:
    def __init__(self, log: logging.Logger):
        self.log = log

    def configured(self, name: str) -> None:
        self.log.debug(f"{'netns ' + name if name else 'host'}: configured",
                       extra={"NETCFG_NETNS": name})

    def removing(self, name: str) -> None:
        self.log.debug(f"netns {name}: going away", extra={"NETCFG_NETNS": name})

    def load(self, model: Any) -> None:
        pass

    def after_pass(self) -> None:
        pass

    def status_json(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass
