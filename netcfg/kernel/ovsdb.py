"""ovs-vswitchd's database over OVSDB (RFC 7047): read the bridges and ports, write them.

netcfg never execs ovs-vsctl. It speaks OVSDB's JSON-RPC on the unix socket
ovsdb-server listens on (/run/openvswitch/db.sock), through Open vSwitch's own
Python library (``ovs`` on PyPI: its IDL keeps a replica of the columns we
register and builds transactions; importing it costs ~35 ms, paid only when a
config has OVS objects or OVS's socket exists).

What is read (``OvsdbClient.rows``): each Bridge and each Port (less a
bridge's own port of the same name), as ``OvsRow`` values: which bridge, which
interface type, the columns netcfg maps (kinds/ovs.py), and whether netcfg made
it (``external_ids:netcfg=1``, set when it inserts a row).

What is written (``OvsdbClient.transact``): the ovs-* operations of one batch
as one transaction, like ``ovs-vsctl add-br / add-port / set / del-port``
chained with ``--``; then, as ``ovs-vsctl --wait=vswitchd`` does, it bumps
Open_vSwitch's next_cfg and waits until ovs-vswitchd reports cur_cfg that far
(its devices exist then), and reads Interface.error of what it added.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from netcfg.kinds.ovs import (BRIDGE, BRIDGE_COLUMNS, MTU, OPTIONS, OVS_BRIDGE, OVS_INTPORT,
                              OVS_PORT, PORT_COLUMNS, TYPE, parse_options)
from netcfg.model.errors import EXIT_APPLY_FAILED_REVERTED, NetcfgError
from netcfg.plan.ops import OVS_ADD, OVS_DEL, OVS_SET, Operation

DB_SOCK = "/run/openvswitch/db.sock"
DATABASE = "Open_vSwitch"
OWNER_KEY = "netcfg"          # external_ids:netcfg=1 on the rows netcfg inserted
TIMEOUT = 10.0                # seconds for a connection, a commit, ovs-vswitchd's catching up

_COLUMNS = {
    "Open_vSwitch": ["bridges", "next_cfg", "cur_cfg"],
    "Bridge": ["name", "ports", "external_ids", "datapath_type", "fail_mode", "stp_enable",
               "rstp_enable", "mcast_snooping_enable"],
    "Port": ["name", "interfaces", "external_ids", "tag", "vlan_mode", "trunks", "other_config"],
    "Interface": ["name", "type", "error", "ifindex", "mtu_request"],
}
_BOOLEAN_COLUMNS = ("stp_enable", "rstp_enable", "mcast_snooping_enable")


class OvsdbUnavailable(NetcfgError):
    """ovsdb-server cannot be reached: nothing was written."""

    exit_code = EXIT_APPLY_FAILED_REVERTED
    retryable = True


class OvsdbError(NetcfgError):
    """OVSDB or ovs-vswitchd refused a change (the apply is reverted); ``op``,
    when one operation is to blame, locates it (apply/refusal.py)."""

    exit_code = EXIT_APPLY_FAILED_REVERTED
    retryable = False

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


@dataclass(frozen=True)
class OvsRow:
    """A bridge or port as netcfg compares it."""

    name: str
    ovs_type: str                        # OVSBridge, OVSPort, OVSIntPort, or another
    bridge: str = ""                     # a port's bridge
    options: dict[str, str] = field(default_factory=dict, compare=False)
    owned: bool = False
    mtu: int | None = None               # its interface's mtu_request (ovs-mtu)


def _first(value: Any) -> Any:
    """An optional OVSDB column (a set of 0 or 1) as its value or None."""
    if isinstance(value, list):
        return value[0] if value else None
    return value


def _port_options(port: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    tag = _first(port.tag)
    if tag is not None:
        out["tag"] = str(tag)
    mode = _first(port.vlan_mode)
    if mode:
        out["vlan_mode"] = mode
    if port.trunks:
        out["trunks"] = ",".join(str(v) for v in sorted(port.trunks))
    for key in PORT_COLUMNS:
        if key.startswith("other_config:") and key.split(":", 1)[1] in port.other_config:
            out[key] = port.other_config[key.split(":", 1)[1]]
    return out


def _bridge_options(bridge: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    if bridge.datapath_type:
        out["datapath_type"] = bridge.datapath_type
    mode = _first(bridge.fail_mode)
    if mode:
        out["fail_mode"] = mode
    for column in _BOOLEAN_COLUMNS:
        if getattr(bridge, column):
            out[column] = "true"     # false is the default, written as nothing
    return out


class OvsdbClient:
    """One connection to ovsdb-server, opened on first use."""

    def __init__(self, path: str = DB_SOCK, timeout: float = TIMEOUT):
        self.path = path
        self.timeout = timeout
        self._idl: Any = None

    # -- connection

    def _unavailable(self, why: str) -> OvsdbUnavailable:
        return OvsdbUnavailable(
            f"Open vSwitch's database is not reachable at {self.path} ({why}): "
            f"openvswitch-switch (ovsdb-server, ovs-vswitchd) is not running. Start it "
            f"(systemctl start openvswitch-switch), or remove the ovs-* lines; nothing was changed")

    def _schema(self) -> Any:
        try:
            import ovs.jsonrpc
            import ovs.stream
        except ImportError:
            raise OvsdbUnavailable("the config has Open vSwitch objects, and Open vSwitch's "
                                   "Python library is not installed: apt-get install "
                                   "python3-openvswitch (or pip install ovs); nothing was "
                                   "changed") from None
        if not os.path.exists(self.path):
            raise self._unavailable("no such socket")
        error, stream = ovs.stream.Stream.open_block(
            ovs.stream.Stream.open("unix:" + self.path), timeout=int(self.timeout * 1000))
        if error:
            raise self._unavailable(os.strerror(error))
        rpc = ovs.jsonrpc.Connection(stream)
        try:
            error, reply = rpc.transact_block(
                ovs.jsonrpc.Message.create_request("get_schema", [DATABASE]))
        finally:
            rpc.close()
        if error or reply is None or reply.error:
            raise self._unavailable(os.strerror(error) if error else str(reply and reply.error))
        return reply.result

    def idl(self) -> Any:
        if self._idl is not None:
            return self._idl
        import ovs.db.idl

        helper = ovs.db.idl.SchemaHelper(schema_json=self._schema())
        for table, columns in _COLUMNS.items():
            helper.register_columns(table, columns)
        idl = ovs.db.idl.Idl("unix:" + self.path, helper)
        seqno = idl.change_seqno
        self._run_until(idl, lambda: idl.change_seqno != seqno and idl.has_ever_connected(),
                        "its first contents")
        self._idl = idl
        return idl

    def _run_until(self, idl: Any, done, what: str) -> None:
        import ovs.poller

        deadline = time.monotonic() + self.timeout
        while True:
            idl.run()
            if done():
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise OvsdbError(f"Open vSwitch ({self.path}): no {what} within "
                                 f"{self.timeout:g} s")
            poller = ovs.poller.Poller()
            idl.wait(poller)
            poller.timer_wait(int(left * 1000) + 1)
            poller.block()

    def close(self) -> None:
        if self._idl is not None:
            self._idl.close()
            self._idl = None

    # -- reading

    def rows(self) -> dict[str, OvsRow]:
        """Every bridge and port by name (names are unique across both in OVS)."""
        idl = self.idl()
        idl.run()
        out: dict[str, OvsRow] = {}
        for bridge in idl.tables["Bridge"].rows.values():
            owned = bridge.external_ids.get(OWNER_KEY) == "1"
            own = [i for p in bridge.ports if p.name == bridge.name for i in p.interfaces]
            out[bridge.name] = OvsRow(bridge.name, OVS_BRIDGE, "", _bridge_options(bridge), owned,
                                      _first(own[0].mtu_request) if own else None)
            for port in bridge.ports:
                if port.name == bridge.name:
                    continue     # the bridge's own internal port
                types = {i.type for i in port.interfaces}
                if len(port.interfaces) != 1:
                    ovs_type = "OVSBond"
                elif types == {"internal"}:
                    ovs_type = OVS_INTPORT
                elif types <= {"", "system"}:
                    ovs_type = OVS_PORT
                else:
                    ovs_type = f"type {types.pop()}"
                mtu = _first(port.interfaces[0].mtu_request) if len(port.interfaces) == 1 \
                    else None
                out[port.name] = OvsRow(port.name, ovs_type, bridge.name, _port_options(port),
                                        port.external_ids.get(OWNER_KEY) == "1", mtu)
        return out

    # -- writing

    def transact(self, ops: Iterable[Operation]) -> int:
        """The ovs-* operations as one transaction; waits for ovs-vswitchd.
        Returns the number of operations written."""
        import ovs.db.idl

        ops = list(ops)
        if not ops:
            return 0
        idl = self.idl()
        root = next(iter(idl.tables["Open_vSwitch"].rows.values()), None)
        if root is None:
            raise OvsdbError(f"Open vSwitch ({self.path}): the database has no Open_vSwitch row "
                             f"(ovs-vswitchd was never started on it)")
        txn = ovs.db.idl.Transaction(idl)
        txn.add_comment("netcfg apply")
        try:
            added = self._build(txn, idl, root, ops)
            root.increment("next_cfg")
            self._commit(txn, idl, ops)
        except BaseException:
            txn.abort()   # the IDL keeps a transaction open until then
            raise
        target = txn.get_increment_new_value()
        self._run_until(idl, lambda: (_first(root.cur_cfg) or 0) >= target,
                        "word from ovs-vswitchd that it applied the change (is ovs-vswitchd "
                        "running?)")
        self._check_interfaces(idl, added, ops)
        return len(ops)

    def _build(self, txn: Any, idl: Any, root: Any, ops: list[Operation]) -> list[str]:
        """The operations written into ``txn``; returns the names of added rows."""
        bridges = {r.name: r for r in idl.tables["Bridge"].rows.values()}
        ports = {p.name: (b, p) for b in bridges.values() for p in b.ports}
        interfaces = {i.name: i for i in idl.tables["Interface"].rows.values()}
        added: list[str] = []
        new_bridges: dict[str, Any] = {}
        for op in sorted(ops, key=lambda o: (o.action != OVS_DEL, o.params.get(TYPE) != OVS_BRIDGE)):
            kind = op.params.get(TYPE)
            options = parse_options(op.params.get(OPTIONS, ""), kind) \
                if OPTIONS in op.params else None
            if op.action == OVS_DEL:
                if kind == OVS_BRIDGE and op.name in bridges:
                    root.delvalue("bridges", bridges[op.name])
                elif op.name in ports:
                    bridge, port = ports[op.name]
                    bridge.delvalue("ports", port)
            elif op.action == OVS_ADD and kind == OVS_BRIDGE:
                port = self._insert_port(txn, idl, op.name, "internal", owned=False,
                                         mtu=op.params.get(MTU))
                bridge = txn.insert(idl.tables["Bridge"])
                bridge.name = op.name
                bridge.ports = [port]
                bridge.external_ids = {OWNER_KEY: "1"}
                self._set_options(bridge, BRIDGE_COLUMNS, options or {}, fresh=True)
                root.addvalue("bridges", bridge)
                new_bridges[op.name] = bridge
                added.append(op.name)
            elif op.action == OVS_ADD:
                port = self._insert_port(txn, idl, op.name,
                                         "internal" if kind == OVS_INTPORT else "", owned=True,
                                         mtu=op.params.get(MTU))
                self._set_options(port, PORT_COLUMNS, options or {}, fresh=True)
                self._bridge(op, bridges, new_bridges).addvalue("ports", port)
                added.append(op.name)
            elif op.action == OVS_SET:
                row = bridges.get(op.name) if kind == OVS_BRIDGE else ports.get(op.name, (0, 0))[1]
                if not row:
                    raise OvsdbError(f"{op.describe()}: Open vSwitch has no {op.name} any more")
                if options is not None:
                    self._set_options(row, BRIDGE_COLUMNS if kind == OVS_BRIDGE else PORT_COLUMNS,
                                      options, fresh=False)
                if MTU in op.params:
                    iface = interfaces.get(op.name)
                    if iface is None:
                        raise OvsdbError(f"{op.describe()}: Open vSwitch has no interface "
                                         f"{op.name}", op)
                    iface.mtu_request = [op.params[MTU]] if op.params[MTU] else []
                if BRIDGE in op.params and kind != OVS_BRIDGE:
                    old, _ = ports[op.name]
                    old.delvalue("ports", row)
                    self._bridge(op, bridges, new_bridges).addvalue("ports", row)
        return added

    def _bridge(self, op: Operation, bridges: dict, new_bridges: dict) -> Any:
        name = op.params.get(BRIDGE, "")
        row = new_bridges.get(name) or bridges.get(name)
        if row is None:
            raise OvsdbError(f"{op.describe()}: Open vSwitch has no bridge {name}")
        return row

    @staticmethod
    def _insert_port(txn: Any, idl: Any, name: str, iface_type: str, owned: bool,
                     mtu: int | None = None) -> Any:
        iface = txn.insert(idl.tables["Interface"])
        iface.name = name
        iface.type = iface_type
        if mtu:
            iface.mtu_request = [mtu]
        port = txn.insert(idl.tables["Port"])
        port.name = name
        port.interfaces = [iface]
        if owned:
            port.external_ids = {OWNER_KEY: "1"}
        return port

    @staticmethod
    def _set_options(row: Any, columns: dict, options: dict[str, str], fresh: bool) -> None:
        """The mapped columns: those in ``options`` set, the others cleared."""
        for key in columns:
            value = options.get(key)
            if key.startswith("other_config:"):
                sub = key.split(":", 1)[1]
                config = {} if fresh else dict(row.other_config)
                if value is None:
                    config.pop(sub, None)
                else:
                    config[sub] = value
                row.other_config = config
            elif key == "tag":
                row.tag = [] if value is None else [int(value)]
            elif key == "trunks":
                row.trunks = [] if value is None else [int(v) for v in value.split(",")]
            elif key in ("vlan_mode", "fail_mode"):
                setattr(row, key, [] if value is None else [value])
            elif key == "datapath_type":
                row.datapath_type = value or ""
            elif key in _BOOLEAN_COLUMNS:
                setattr(row, key, value == "true")
            else:   # a column kinds/ovs.py maps and this table does not write
                raise AssertionError(f"ovs-options column {key} has no writer")

    def _commit(self, txn: Any, idl: Any, ops: list[Operation]) -> None:
        import ovs.db.idl
        import ovs.poller

        deadline = time.monotonic() + self.timeout
        status = txn.commit()
        while status == ovs.db.idl.Transaction.INCOMPLETE:
            left = deadline - time.monotonic()
            if left <= 0:
                txn.abort()
                raise OvsdbError(f"Open vSwitch ({self.path}): the transaction was not "
                                 f"answered within {self.timeout:g} s")
            idl.run()
            poller = ovs.poller.Poller()
            idl.wait(poller)
            txn.wait(poller)
            poller.timer_wait(int(left * 1000) + 1)
            poller.block()
            status = txn.commit()
        if status not in (ovs.db.idl.Transaction.SUCCESS, ovs.db.idl.Transaction.UNCHANGED):
            what = "; ".join(op.describe() for op in ops[:3])
            raise OvsdbError(f"Open vSwitch refused {what}: "
                             f"{ovs.db.idl.Transaction.status_to_string(status)} "
                             f"{txn.get_error() or ''}".rstrip())

    def _check_interfaces(self, idl: Any, added: list[str], ops: list[Operation]) -> None:
        by_name = {i.name: i for i in idl.tables["Interface"].rows.values()}
        for name in added:
            iface = by_name.get(name)
            error = _first(iface.error) if iface is not None else "no Interface row"
            if error:
                op = next(o for o in ops if o.name == name)
                raise OvsdbError(f"{op.describe()[2:]}: ovs-vswitchd: {error}", op)
