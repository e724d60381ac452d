"""The wireguard kind's pure parts: peer lines, X25519, the messages
kernel/wireguard.py builds with pyroute2's ``wgmsg`` (SET_DEVICE encoded by
pyroute2, decoded by it again and read as GET_DEVICE would give it back), a
real kernel answer decoded, and the encode dispatch that leaves the genl
part to the applier. The kernel's side is tests/vm/test_vm_wireguard.py."""

from __future__ import annotations

import struct

import pytest

from pyroute2.netlink.generic.wireguard import wgmsg

from netcfg.kernel.wireguard import (MAX_MESSAGE, WG_CMD_SET_DEVICE, WGDEVICE_F_REPLACE_PEERS,
                                     DeviceConfig, device_attributes, parse_device,
                                     set_device_messages)
from netcfg.kinds.genl import genl_attributes
from netcfg.kinds.wireguard import GENL_ATTRIBUTES, Peer, key_bytes, key_text, parse_peer, public_key
from netcfg.netlink.encode import StaticContext, encode
from netcfg.netlink.nlmsg import IFLA_IFNAME, IFLA_INFO_DATA, IFLA_INFO_KIND, IFLA_LINKINFO, \
    IFINFOMSG, RTM_NEWLINK, attr_str, parse_attrs
from netcfg.plan.ops import LINK_ADD, LINK_SET, Operation

K1 = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="
K2 = "TrMvSoP4jYQlY6RIzBgbssQqY3vxI2Pi+y71lOWWXX0="


def test_x25519_rfc7748_vectors():
    # RFC 7748 section 6.1: Alice's and Bob's key pairs.
    alice = bytes.fromhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    bob = bytes.fromhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
    assert public_key(alice).hex() == \
        "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
    assert public_key(bob).hex() == \
        "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"


def test_peer_line_is_canonical():
    peer = parse_peer(f"{K1} persistent-keepalive 25 endpoint [2001:DB8::2]:51820 "
                      f"allowed-ips fd09::2/128,10.9.0.2/32,10.9.0.2/32")
    assert peer == Peer(K1, ("10.9.0.2/32", "fd09::2/128"), "[2001:db8::2]:51820", 25)
    assert parse_peer(peer.text()) == peer
    assert parse_peer(K2).text() == K2


@pytest.mark.parametrize("line, says", [
    ("notakey", "not base64"),
    (f"{K1} allowed-ips 10.0.0.1/24", "host bits set"),
    (f"{K1} endpoint vpn.example.com:51820", "not an IP address"),
    (f"{K1} endpoint 2001:db8::1:51820", "in brackets"),
    (f"{K1} endpoint 192.0.2.1:0", "port 1-65535"),
    (f"{K1} persistent-keepalive", "has no value"),
    (f"{K1} keepalive 25", "not a peer setting"),
    (f"{K1} preshared-key-file /etc/psk", "not supported yet"),
])
def test_peer_line_errors(line, says):
    with pytest.raises(ValueError, match=says):
        parse_peer(line)


def test_key_must_be_canonical_base64_of_32_bytes():
    assert key_text(key_bytes(K1)) == K1
    with pytest.raises(ValueError):
        key_bytes(K1[:-2] + "B=")     # decodes, but is not canonical (stray low bits)
    with pytest.raises(ValueError):
        key_bytes("AAAA")


FAMILY_ID = 27   # any: the family's id is the kernel's choice


def _on_the_wire(messages) -> list[bytes]:
    """pyroute2's encoding of each message, as sendmsg would carry it."""
    out = []
    for msg in messages:
        msg["header"]["type"] = FAMILY_ID
        msg.encode()
        out.append(bytes(msg.data))
    return out


def _decoded(datagrams: list[bytes], public: bytes | None = None) -> list:
    """Datagrams decoded by pyroute2's wgmsg, as GET_DEVICE's answer comes
    (with the device's public key, which SET_DEVICE does not carry)."""
    decoded = []
    for data in datagrams:
        msg = wgmsg(data)
        msg.decode()
        if public is not None:
            msg["attrs"].append(("WGDEVICE_A_PUBLIC_KEY", key_text(public).encode()))
        decoded.append(msg)
    return decoded


def test_set_device_then_read_back_round_trip():
    private = bytes(range(32))
    peers = [parse_peer(f"{K1} allowed-ips 10.9.0.2/32,fd09::2/128 endpoint 192.0.2.2:51820 "
                        f"persistent-keepalive 25"),
             parse_peer(f"{K2} allowed-ips 10.9.1.0/24 endpoint [2001:db8::1]:4500")]
    messages = set_device_messages(DeviceConfig("wg0", private, 51820, 81, peers))
    assert len(messages) == 1
    decoded, = _decoded(_on_the_wire(messages), public_key(private))
    assert decoded["cmd"] == WG_CMD_SET_DEVICE
    assert decoded.get_attr("WGDEVICE_A_FLAGS") == WGDEVICE_F_REPLACE_PEERS
    device = parse_device([decoded])
    assert (device.ifname, device.private_key, device.listen_port, device.fwmark) == \
        ("wg0", private, 51820, 81)
    assert device.peers == peers
    attrs = device_attributes(device)
    assert attrs["wireguard-public-key"] == key_text(public_key(private))
    assert attrs["wireguard-peer"] == sorted(p.text() for p in peers)
    # A peer the config gives no endpoint: the learned one is not compared.
    learned = device_attributes(device, endpoints_unmanaged={K2})
    assert f"{K2} allowed-ips 10.9.1.0/24" in learned["wireguard-peer"]


def test_many_peers_are_cut_into_messages_and_merged_back():
    peers = [Peer(key_text(i.to_bytes(2, "big") * 16), (f"10.{i >> 8}.{i & 255}.0/24",))
             for i in range(1, 1500)]
    datagrams = _on_the_wire(set_device_messages(DeviceConfig("wg0", peers=peers)))
    assert len(datagrams) > 1 and all(len(d) <= MAX_MESSAGE for d in datagrams)
    decoded = _decoded(datagrams)
    # Only the first replaces the peer set; the others add to it.
    assert decoded[0].get_attr("WGDEVICE_A_FLAGS") == WGDEVICE_F_REPLACE_PEERS
    assert all(m.get_attr("WGDEVICE_A_FLAGS") is None for m in decoded[1:])
    assert sorted(parse_device(decoded).peers) == sorted(peers)


def test_no_peers_given_leaves_them_alone_and_empty_replaces_all():
    untouched, = _decoded(_on_the_wire(set_device_messages(DeviceConfig("wg0", listen_port=1))))
    assert untouched.get_attr("WGDEVICE_A_FLAGS") is None
    assert untouched.get_attr("WGDEVICE_A_PEERS") is None
    emptied, = _decoded(_on_the_wire(set_device_messages(DeviceConfig("wg0", peers=[]))))
    assert emptied.get_attr("WGDEVICE_A_FLAGS") == WGDEVICE_F_REPLACE_PEERS
    assert not emptied.get_attr("WGDEVICE_A_PEERS")


def test_the_kind_declares_its_generic_netlink_attributes():
    assert set(GENL_ATTRIBUTES) <= genl_attributes()


def test_encode_creates_the_device_and_leaves_genl_params_to_the_applier():
    op = Operation(LINK_ADD, "", "wg0", params={
        "kind": "wireguard", "wireguard-public-key": K1, "wireguard-listen-port": 51820,
        "wireguard-peer": [f"{K2} allowed-ips 10.0.0.0/24"], "mtu": 1400})
    request, = encode(op, StaticContext())
    assert request.type == RTM_NEWLINK
    attrs = parse_attrs(request.payload, IFINFOMSG.size)
    assert attr_str(attrs[IFLA_IFNAME]) == "wg0"
    info = parse_attrs(attrs[IFLA_LINKINFO])
    assert attr_str(info[IFLA_INFO_KIND]) == "wireguard"
    assert IFLA_INFO_DATA not in info or not bytes(info[IFLA_INFO_DATA])
    assert K1.encode() not in request.payload
    changed = Operation(LINK_SET, "", "wg0", params={"wireguard-listen-port": 51821})
    assert encode(changed, StaticContext(ifindexes={("", "wg0"): 7})) == []


# A real WG_CMD_GET_DEVICE answer, captured in the VM tier (Debian's 6.12,
# tests/vm/test_vm_wireguard.py prints it): device b of that test, with a
# throwaway key pair made for the run. Its peer's endpoint was learned from
# the handshake; the kernel lists the peer's allowed IPs in its trie's order.
CAPTURED_GET_DEVICE = bytes.fromhex(
    "00010000060006006dca000008000700070000000800010012000000080002007767300024000300c021047d"
    "9aad53d4f69ec254c69e7de1174a7ea46d99a902379327037992a74d240004000289f35c048d9e5191d3165a"
    "8da7fd88fda4f32a6ba4e53518616db5d27fc42fe8000880e40000802400010073c8ad02a0ad98292858de15"
    "ec2686c262ca72a82de9d63f25526926781f4b1b240002000000000000000000000000000000000000000000"
    "000000000000000000000000140006006e44066b00000000d07dc8060000000006000500050000000c000800"
    "fc000000000000000c000700140100000000000008000a0001000000140004000200ca6cc0a8320100000000"
    "00000000480009801c00008005000300200000000600010002000000080002000a4600012800008005000300"
    "40000000060001000a00000014000200fd700000000000000000000000000000")


def test_a_captured_kernel_answer_decodes():
    header = struct.pack("=IHHII", 16 + len(CAPTURED_GET_DEVICE), FAMILY_ID, 2, 1, 0)
    device = parse_device(_decoded([header + CAPTURED_GET_DEVICE]))
    assert (device.ifname, device.listen_port, device.fwmark) == ("wg0", 51821, 7)
    # Our X25519 agrees with the kernel's on the key pair it holds.
    assert public_key(device.private_key) == device.public_key
    peer, = device.peers
    assert peer.allowed_ips == ("10.70.0.1/32", "fd70::/64")
    assert (peer.endpoint, peer.keepalive) == ("192.168.50.1:51820", 5)
    attrs = device_attributes(device, endpoints_unmanaged={peer.public_key})
    assert attrs["wireguard-peer"] == [f"{peer.public_key} allowed-ips 10.70.0.1/32,fd70::/64 "
                                       f"persistent-keepalive 5"]
    assert key_text(device.private_key) not in repr(attrs)
