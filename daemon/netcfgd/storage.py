"""The embedded iSCSI target inside netcfgd, driven by the namespace lifecycle.

    config loaded   -> volumes and targets known; the data path starts (only
                       when the config has any)
    pass succeeded  -> every configured namespace that has targets is handed
                       to the data path (its fd and identity), and the
                       portals of those namespaces open: their addresses
                       exist now, because the pass made the namespace equal
                       to the config
    namespace going -> its listeners and sessions close before netcfgd
                       removes it, or as soon as it is found deleted

Portals open after the pass, never before it: a portal's address may be one
the same pass adds. Changing one target (re-reading its secrets, adding a
LUN) touches that target only; other tenants' sessions go on
(`TargetService.apply` calls the data path only for what changed).

Volumes with ``ublk yes`` are also local block devices (daemon/netcfgd/ublk.py):
they appear after the pass that declares them, go when the config drops
them unless they are in use (then they stay, shown by `netcfg status` with
what holds them), and outlive netcfgd itself: the next netcfgd adopts them.

A storage error (a CHAP secret file with the wrong owner, a backing file
that cannot be opened, a shrink under live sessions, a portal address the
namespace does not have) never stops the daemon, the network reconcile or
the other targets: it is logged, shown by `netcfg status`, returned to a
`netcfg apply` through netcfgd (exit 5), and tried again after the next pass.
What was changed (a volume re-opened, grown online) is logged and returned
to the apply the same way.

Limits on what initiators may make the data path hold (docs/dataplane.md
"Memory and connection limits") come from the environment of netcfgd (its
unit file): NETCFGD_STORAGE_MEMORY (write data waiting for Data-Out, all
tenants; default 1G), NETCFGD_STORAGE_NETNS_MEMORY (per namespace; 256M),
NETCFGD_STORAGE_NETNS_CONNECTIONS (per namespace; 256).
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable

from netcfg.model.errors import NetcfgError
from netcfg.model.model import Model

from netcfgd.dataplane import Outcome
from netcfgd.hooks import NamespaceHooks


class StorageHooks(NamespaceHooks):
    """NamespaceHooks that serve the config's volumes and targets."""

    def __init__(self, log: logging.Logger, open_netns: Callable[[str], Any]):
        super().__init__(log)
        self.open_netns = open_netns          # name -> netcfg.kernel.ns.Netns
        self.service: Any = None              # a netcfgd.dataplane.TargetService
        self.ublk: Any = None                 # a netcfgd.ublk.UblkService, with service
        self.model: Model | None = None
        self.ready: set[str] = set()          # namespaces configured by a pass
        self.error: str | None = None
        self.errors: list[str] = []           # of the last after_pass that ran
        self.changes: list[str] = []          # what the last after_pass that ran did
        # What the last successful after_pass served: a pass that changed
        # none of it (most passes: one repaired address) costs nothing here,
        # instead of re-reading every target's secret files.
        self._served: tuple | None = None
        self._loads = 0                       # configs loaded so far

    # ---------------------------------------------------------------- lifecycle

    def load(self, model: Model) -> None:
        """A config was loaded. Nothing is opened yet: the next pass may be
        what creates the namespaces and addresses the portals need."""
        self.model = model
        self._loads += 1

    def configured(self, name: str) -> None:
        super().configured(name)
        self.ready.add(name)

    def removing(self, name: str) -> None:
        super().removing(name)
        self.ready.discard(name)
        if self.service is not None and name in self.service.namespaces:
            self.service.remove_namespace(name)
            self.log.info(f"storage: {_where(name)}: listeners and sessions closed",
                          extra={"NETCFG_NETNS": name})

    def after_pass(self) -> None:
        """Serve what the config asks for in the namespaces that are ready."""
        model = self.model
        if model is None or (self.service is None and not (model.volumes or model.targets)):
            # Nothing to serve: nothing done, nothing refused.
            self.errors, self.error, self.changes = [], None, []
            return
        if self._served == self._state() and not (self.ublk is not None and self.ublk.busy()):
            return
        errors: list[str] = []
        self.changes = []
        try:
            if self.service is None:
                self.service = _start_dataplane()
                self.ublk = _ublk_service(self.service, self.log)
                self.log.info("storage: embedded iSCSI target started")
            for name in self.service.namespaces_needed(model):
                if name in self.ready and name not in self.service.namespaces:
                    self.service.add_namespace(self.open_netns(name))
            done = Outcome()
            self.ublk.remove_dropped(model, done)
            outcome = self.service.apply(model, pinned=frozenset(self.ublk.pinned()))
            self.ublk.add_wanted(model, done)
            errors = outcome.errors + done.errors
            self.changes = outcome.changes + done.changes
        except (NetcfgError, OSError, ValueError) as e:
            errors = [str(e)]
        for change in self.changes:
            self.log.info(f"storage: {change}")
        for error in errors:
            if error not in self.errors:
                self.log.error(f"storage: {error}; other targets and the network are not "
                               f"affected; retried after the next pass")
        if self.errors and not errors:
            self.log.info("storage: serving every target again")
        self.errors = errors
        self.error = "; ".join(errors) or None
        if not errors:
            self._served = self._state()

    def _state(self) -> tuple:
        """What after_pass depends on: the config, the configured namespaces
        and those the data path serves (a re-created one was dropped)."""
        served = frozenset(self.service.namespaces) if self.service is not None else None
        return self._loads, frozenset(self.ready), served

    def close(self) -> None:
        if self.service is not None:
            self.service.dp.shutdown()
            self.service = None

    # ---------------------------------------------------------------- status

    def status_json(self) -> dict[str, Any]:
        if self.service is None:
            return {"running": False, "error": self.error, "errors": self.errors,
                    "changes": self.changes, "targets": []}
        sessions = self.service.sessions()
        stats = self.service.dp.stats()
        exported = {v for spec in self.service.targets.values() for v in spec.luns.values()}
        used, limit = stats["write_budget"]
        return {
            "running": True,
            "error": self.error,
            "errors": self.errors,
            "changes": self.changes,
            "ublk": self.ublk.status_json(exported),
            "volumes": [{"name": name, "bytes": blocks * block_size}
                        for name, (blocks, block_size) in sorted(stats["volumes"].items())],
            "write_budget": {"used": used, "limit": limit},
            "targets": [{"iqn": spec.iqn, "netns": spec.netns,
                         "portals": [f"{a}:{p}" for a, p in spec.portals],
                         "serving": spec.netns in self.service.namespaces,
                         "sessions": sessions.get(spec.iqn, 0)}
                        for _, spec in sorted(self.service.targets.items())],
        }


def _where(name: str) -> str:
    return f"netns {name}" if name else "host"


def _ublk_service(service: Any, log: logging.Logger) -> Any:
    from netcfgd.ublk import UblkService

    return UblkService(service.dp, log)


def _start_dataplane() -> Any:
    from netcfgd import _dataplane
    from netcfgd.dataplane import TargetService, budgets_from_environment

    return TargetService(_dataplane.Dataplane(**budgets_from_environment(os.environ)))
