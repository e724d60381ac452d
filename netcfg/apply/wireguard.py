"""WireGuard at the edge: key files in, generic netlink out.

Two steps the pure planner cannot take:

- ``resolve(model, session)``, before the diff: each wireguard device's
  ``wireguard-private-key-file`` is read (a regular file owned by root,
  readable by nobody else, as CHAP secret files are) and replaced by
  ``wireguard-public-key``, the public key of the key read. The kernel gives
  the public key back (WGDEVICE_A_PUBLIC_KEY), so the diff compares public
  keys like any attribute and a plan never carries a secret; the private
  key waits in the session (kernel/wireguard.keys) for the write.
- ``configure(op, session)``, after the batch that made or changed the
  device: one WG_CMD_SET_DEVICE (more for thousands of peers) in the
  device's namespace, with WGDEVICE_F_REPLACE_PEERS when the peers changed,
  through pyroute2 (kernel/wireguard.py).

A revert sets back the public key a device had: its private key was read
back with it (GET_DEVICE hands it to CAP_NET_ADMIN), so it is known too.
"""

from __future__ import annotations

import dataclasses

from netcfg.apply.secrets import read_private_file
from netcfg.kernel.nl import NetlinkError
from netcfg.kernel.session import KernelSession
from netcfg.kernel.wireguard import DeviceConfig, keys, set_device
from netcfg.kinds.wireguard import (CONFIG_PATH, FWMARK, LISTEN_PORT, PEER, PRIVATE_KEY_FILE,
                                    PUBLIC_KEY, key_bytes, key_text, parse_peer, public_key)
from netcfg.kinds.wireguard_conf import ConfError, WgConf, parse_conf
from netcfg.model.errors import EXIT_APPLY_FAILED_REVERTED, EXIT_INVALID_CONFIG, NetcfgError
from netcfg.model.model import Model
from netcfg.plan.ops import LINK_ADD, LINK_SET, Operation

KIND = "wireguard"


class KeyFileError(NetcfgError):
    """A key file netcfg will not use; nothing was written. ``device``: the
    (netns, name) of the wireguard device whose key file it is, when known
    (netcfgd holds that device down and repairs the rest: issue 23 M2)."""

    exit_code = EXIT_INVALID_CONFIG
    retryable = False

    def __init__(self, message: str, device: tuple[str, str] | None = None):
        super().__init__(message)
        self.device = device


class WireguardError(NetcfgError):
    """The kernel refused a WireGuard setting (the apply is reverted)."""

    exit_code = EXIT_APPLY_FAILED_REVERTED
    retryable = False


def read_key_file(path: str, what: str) -> bytes:
    """A WireGuard private key file (base64 of 32 bytes, as `wg genkey` writes
    it): a regular file owned by root, readable and writable by root alone."""
    content = read_private_file(path, what, KeyFileError, holds="the key")
    try:
        return key_bytes(content.decode("ascii", errors="replace").strip())
    except ValueError:
        raise KeyFileError(f"{what} {path}: not a WireGuard private key (one line of base64, "
                           f"as `wg genkey` writes)") from None


# A setconf file with thousands of peers is bigger than a key file.
MAX_CONF_BYTES = 4 << 20


def read_conf_file(path: str, what: str) -> WgConf:
    """A `wg setconf` file (kinds/wireguard_conf.py), checked as key files are:
    it holds the private key."""
    content = read_private_file(path, what, KeyFileError, holds="the private key",
                                limit=MAX_CONF_BYTES)
    try:
        return parse_conf(content.decode("utf-8", errors="replace"), path)
    except ConfError as e:
        raise KeyFileError(f"{what}: {e}") from None


def _from_conf(written: dict, what: str) -> tuple[dict, bytes | None]:
    """The attributes (or op params) a config-path stanza stands for, and the
    private key."""
    conf = read_conf_file(written[CONFIG_PATH], what)
    attrs = {a: v for a, v in written.items() if a != CONFIG_PATH}
    for attribute, value in ((LISTEN_PORT, conf.listen_port), (FWMARK, conf.fwmark)):
        if value is not None:
            attrs[attribute] = value
    attrs[PEER] = [p.text() for p in sorted(conf.peers)]
    if conf.private_key is not None:
        attrs[PUBLIC_KEY] = key_text(public_key(conf.private_key))
    return attrs, conf.private_key


def resolve(model: Model, session: KernelSession) -> Model:
    """``model`` with each wireguard device's key file replaced by its public
    key, and the peers without an endpoint noted (their learned endpoint is
    not compared). The caller's model is not changed (netcfgd keeps it)."""
    devices = [o for o in model.interfaces.values() if o.kind == KIND]
    if not devices:
        return model
    interfaces = dict(model.interfaces)
    known = keys(session.genl)
    for obj in devices:
        if CONFIG_PATH in obj.attrs:
            what = f"{obj.label()}: {CONFIG_PATH} (at {obj.where(CONFIG_PATH)})"
            try:
                attrs, private = _from_conf(obj.attrs, what)
            except KeyFileError as e:
                raise KeyFileError(str(e), obj.key) from None
            if private is not None:
                if any(parse_peer(t).public_key == attrs[PUBLIC_KEY] for t in attrs[PEER]):
                    raise KeyFileError(f"{what}: its PrivateKey is the private half of one of "
                                       f"its peers; a device cannot be its own peer", obj.key)
                known.private[attrs[PUBLIC_KEY]] = private
            obj = dataclasses.replace(obj, attrs=attrs)
            interfaces[obj.key] = obj
        peers = [parse_peer(text) for text in obj.attrs.get(PEER, ())]
        known.endpointless[obj.key] = frozenset(
            p.public_key for p in peers if not p.endpoint)
        path = obj.attrs.get(PRIVATE_KEY_FILE)
        if path is None:
            continue
        what = f"{obj.label()}: {PRIVATE_KEY_FILE} (at {obj.where(PRIVATE_KEY_FILE)})"
        try:
            private = read_key_file(path, what)
        except KeyFileError as e:
            raise KeyFileError(str(e), obj.key) from None
        public = key_text(public_key(private))
        written = obj.attrs.get(PUBLIC_KEY)
        if written is not None and written != public:
            raise KeyFileError(f"{what}: the key in {path} has public key {public}, not the "
                               f"{PUBLIC_KEY} {written} the config gives; remove one of them",
                               obj.key)
        if any(p.public_key == public for p in peers):
            # The kernel drops a peer with the device's own key when the key
            # is set (wg_noise_set_static_identity_private_key): refuse it here.
            raise KeyFileError(f"{what}: the key in {path} is the private half of peer "
                               f"{public}; a device cannot be its own peer. Use another key "
                               f"file, or remove that peer", obj.key)
        known.private[public] = private
        attrs = {a: v for a, v in obj.attrs.items() if a != PRIVATE_KEY_FILE}
        attrs[PUBLIC_KEY] = public
        interfaces[obj.key] = dataclasses.replace(obj, attrs=attrs)
    return dataclasses.replace(model, interfaces=interfaces)


def configure(op: Operation, session: KernelSession) -> int:
    """Send the generic netlink part of a link-add / link-set of a wireguard
    device (apply/genl.py calls it when the op has some); returns the
    requests sent."""
    if op.action not in (LINK_ADD, LINK_SET):
        return 0
    params = op.params
    config = DeviceConfig(op.name)
    if CONFIG_PATH in params:          # a plan made without resolve()
        params, config.private_key = _from_conf(params, f"{op.name}: {CONFIG_PATH}")
    elif PRIVATE_KEY_FILE in params:   # a plan made without resolve()
        config.private_key = read_key_file(params[PRIVATE_KEY_FILE], f"{op.name}: "
                                           f"{PRIVATE_KEY_FILE}")
    elif params.get(PUBLIC_KEY):
        config.private_key = keys(session.genl).private.get(params[PUBLIC_KEY])
        if config.private_key is None:
            raise WireguardError(f"{op.describe()}: netcfg has no private key for public key "
                                 f"{params[PUBLIC_KEY]}; write {PRIVATE_KEY_FILE} (a device's "
                                 f"key cannot be set from its public half)")
    if LISTEN_PORT in params:
        config.listen_port = params[LISTEN_PORT] or 0
    if FWMARK in params:
        config.fwmark = params[FWMARK] or 0
    if PEER in params:
        config.peers = [parse_peer(text) for text in params[PEER] or ()]
    try:
        return set_device(session.genl, op.netns, config, tag=op)
    except NetlinkError as e:
        raise WireguardError(f"{op.describe()}: WG_CMD_SET_DEVICE: {e}") from None
