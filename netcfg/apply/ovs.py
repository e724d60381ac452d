"""Open vSwitch at the edge: its database read into the current model, ovs-* operations written.

- ``read_into(view, kernel, desired, session)``: the bridges and ports of
  ovs-vswitchd's database (kernel/ovsdb.py) become objects of kind ``ovs`` in
  the model the diff compares, on top of what netlink read of their devices
  (addresses, up, MTU stay the kernel's). Only rows the config writes as
  OVS objects, or rows netcfg made (external_ids:netcfg=1), are compared: a bridge that
  ifupdown2 made on a Proxmox host and the config names is taken over as it
  is, a VM's tap port that qemu-server added is never touched.
- ``execute(ops, session)``: one batch's ovs-* operations, one transaction.

The OVSDB socket is $OVS_RUNDIR/db.sock (OVS's own tools read the same
variable), /run/openvswitch/db.sock by default. It is opened only when the
config has OVS objects or the socket exists; a config with OVS objects and
no ovsdb-server fails before anything is written, naming the daemon.
"""

from __future__ import annotations

import dataclasses
import os

from netcfg.kernel.ovsdb import OvsdbClient
from netcfg.kernel.session import KernelSession
from netcfg.kinds.ovs import BRIDGE, KIND_NAME, MTU, OPTIONS, TYPE, format_options
from netcfg.model.model import IFACE, ROOT_NETNS, ConfigObject, Model
from netcfg.plan.ops import Operation
from netcfg.plan.ovs import ovs_objects

# The kernel datapath's device: the kernel's master of every OVS port.
DATAPATH_DEVICE = "ovs-system"


def socket_path() -> str:
    return os.path.join(os.environ.get("OVS_RUNDIR", "/run/openvswitch"), "db.sock")


def client(session: KernelSession) -> OvsdbClient:
    if session.ovsdb is None:
        session.ovsdb = OvsdbClient(socket_path())
    return session.ovsdb


def read_into(view: Model, kernel: Model, desired: Model, session: KernelSession) -> Model:
    """``view`` (the managed view of ``kernel``) with OVS's bridges and ports
    as ``ovs`` objects; changed in place and returned."""
    wanted = ovs_objects(desired)
    if session.ovsdb is None and not wanted and not os.path.exists(socket_path()):
        return view
    rows = client(session).rows()
    for name, row in rows.items():
        key = (ROOT_NETNS, name)
        if key not in wanted and not row.owned:
            # Another's row, which the config does not write as OVS: not
            # compared, so never changed or deleted (a config that names
            # vmbr0 without ovs-type does not remove Proxmox's bridge).
            continue
        base = view.interfaces.get(key) or kernel.interfaces.get(key)
        attrs = dict(base.attrs) if base is not None else {}
        attrs[TYPE] = row.ovs_type
        if row.bridge:
            attrs[BRIDGE] = row.bridge
        if row.options:
            attrs[OPTIONS] = format_options(row.options)
        if row.mtu:
            attrs[MTU] = row.mtu
        if base is not None:
            obj = dataclasses.replace(base, kind=KIND_NAME, attrs=attrs)
        else:   # a row whose device ovs-vswitchd has not made (or could not)
            obj = ConfigObject(section=IFACE, name=name, kind=KIND_NAME, netns=ROOT_NETNS,
                               attrs=attrs)
        view.interfaces[key] = obj
        master = view.masters.get(key)
        if master is not None and master[1] == DATAPATH_DEVICE:
            # OVS's datapath is not a master netcfg manages (kinds/ovs.py).
            del view.masters[key]
    return view


def execute(ops: list[Operation], session: KernelSession) -> int:
    """One batch's ovs-* operations as one OVSDB transaction; returns how many."""
    return client(session).transact(ops) if ops else 0
