"""The rtnetlink socket on the real kernel: batched writes, kernel-filtered dumps.

Runs as root inside the sandbox (conftest.py: a private network and mount
namespace). State is read back through netlink and, as a peer, through
`ip -j`. Run with -s for the timings the benchmarks doc quotes.
"""

from __future__ import annotations

import errno
import ipaddress
import subprocess
import time

import pytest

from netcfg.kernel.nl import Counters, DumpInterrupted, NetlinkError, RtnlSocket
from netcfg.netlink.nlmsg import (AF_INET, AF_INET6, IFADDRMSG, IFA_ADDRESS, IFA_LOCAL, IFF_UP,
                                  IFINFOMSG, IFLA_GROUP, IFLA_IFNAME, IFLA_MASTER, NLM_F_CREATE,
                                  NLM_F_EXCL, RTA_DST, RTA_OIF, RTA_TABLE, RTEXT_FILTER_SKIP_STATS,
                                  RTMSG, RTM_DELLINK, RTM_GETADDR, RTM_GETLINK, RTM_GETROUTE,
                                  RTM_NEWADDR, RTM_NEWLINK, RTM_NEWROUTE, RTM_SETLINK, RTN_UNICAST,
                                  RTPROT_STATIC, RT_SCOPE_LINK, VETH_INFO_PEER, Request, attr_str,
                                  attr_u32, dellink_group, getaddr_dump, getlink_dump,
                                  getroute_dump, ifaddrmsg, ifinfomsg, link_kind, linkinfo,
                                  parse_attrs, rtattr, rtattr_str, rtattr_u32, rtmsg)

# The sandbox guard (root, never the host's namespaces) is tests/kernel_env.py.

GROUP = 4242          # every device these tests create, so one request removes them
OTHER_GROUP = 4243    # the `ip -batch` comparison's devices
PAIRS = 200
ACK_BYTES = 36        # nlmsghdr + errno + the request's nlmsghdr (NETLINK_CAP_ACK)


# --- requests, built the way netcfg's kinds will build them ---------------------
def veth_pair(name: str, peer: str, group: int = GROUP) -> Request:
    """Equivalent to: `ip link add NAME group G type veth peer name PEER group G`."""
    peer_msg = ifinfomsg() + rtattr_str(IFLA_IFNAME, peer) + rtattr_u32(IFLA_GROUP, group)
    return Request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL,
                   ifinfomsg() + rtattr_str(IFLA_IFNAME, name) + rtattr_u32(IFLA_GROUP, group)
                   + linkinfo("veth", [rtattr(VETH_INFO_PEER, peer_msg)]), tag=name)


def pair_names(count: int, prefix: str = "") -> list[tuple[str, str]]:
    # Same-length names: every request is the same size, so chunking is countable.
    return [(f"{prefix}va{i:03d}", f"{prefix}vb{i:03d}") for i in range(count)]


def create_pairs(rtnl: RtnlSocket, count: int = PAIRS) -> list[tuple[str, str]]:
    names = pair_names(count)
    rtnl.transact([veth_pair(a, b) for a, b in names]).raise_first()
    return names


def read_links(rtnl: RtnlSocket, **filters) -> tuple[dict[str, dict], bool]:
    """name -> {index, group, master, kind} from one (filtered) link dump."""
    dump = rtnl.dump(RTM_GETLINK, getlink_dump(**filters))
    links = {}
    for _type, _flags, payload in dump:
        index = IFINFOMSG.unpack_from(payload)[2]
        attrs = parse_attrs(payload, IFINFOMSG.size, {IFLA_IFNAME, IFLA_GROUP, IFLA_MASTER})
        links[attr_str(attrs[IFLA_IFNAME])] = {
            "index": index,
            "group": attr_u32(attrs[IFLA_GROUP]),
            "master": attr_u32(attrs[IFLA_MASTER]) if IFLA_MASTER in attrs else None,
            "kind": link_kind(payload),
        }
    return links, dump.filtered


def ip_json(*args: str) -> list[dict]:
    import json
    out = subprocess.run(["ip", "-j", *args], check=True, capture_output=True, text=True).stdout
    # iproute2 6.1 prints {} for each link a `group` or `master` filter leaves out.
    return [obj for obj in json.loads(out) if obj] if out.strip() else []


def delete_group(rtnl: RtnlSocket, group: int) -> None:
    """Equivalent to: `ip link delete group G`; a group with no device is ENODEV."""
    try:
        rtnl.request(RTM_DELLINK, 0, dellink_group(group))
    except NetlinkError as e:
        if e.errno != errno.ENODEV:
            raise


@pytest.fixture
def rtnl():
    sock = RtnlSocket.open()
    before, _ = read_links(sock)
    assert not any(link["group"] in (GROUP, OTHER_GROUP) for link in before.values())
    yield sock
    delete_group(sock, GROUP)
    delete_group(sock, OTHER_GROUP)
    sock.close()


def test_deleting_an_empty_group_is_enodev(rtnl):
    with pytest.raises(NetlinkError) as caught:
        rtnl.request(RTM_DELLINK, 0, dellink_group(GROUP))
    assert caught.value.errno == errno.ENODEV


# --- batched writes -------------------------------------------------------------
def test_200_veth_pairs_in_one_transact(rtnl):
    names = pair_names(PAIRS)
    requests = [veth_pair(a, b) for a, b in names]
    before = rtnl.counters.copy()
    result = rtnl.transact(requests)

    assert result.ok and result.errors == [None] * PAIRS
    # All 200 and the barrier in one sendmsg; the barrier's ACK is the only answer.
    assert rtnl.counters.since(before) == Counters(
        messages_sent=PAIRS + 1, sendmsg_calls=1, recv_calls=1, bytes_received=ACK_BYTES,
        acks=1, errors=0)

    links = {link["ifname"]: link for link in ip_json("link", "show", "group", str(GROUP))}
    assert set(links) == {n for pair in names for n in pair}
    assert all(link["group"] == str(GROUP) for link in links.values())
    assert links["va057"]["link"] == "vb057"
    ours, _ = read_links(rtnl, kind="veth")
    assert {n for n, link in ours.items() if link["group"] == GROUP} == set(links)


def test_chunks_fit_the_send_limit_and_the_counters_say_so(rtnl):
    requests = [veth_pair(a, b) for a, b in pair_names(PAIRS)]
    size = len(requests[0].payload) + 16
    assert all(len(r.payload) + 16 == size for r in requests)
    before = rtnl.counters.copy()

    result = rtnl.transact(requests, max_send=16 * size)

    assert result.ok
    # 16 requests per sendmsg: 12 full chunks, then 8 requests and the barrier.
    assert rtnl.counters.since(before) == Counters(
        messages_sent=PAIRS + 1, sendmsg_calls=13, recv_calls=1, bytes_received=ACK_BYTES,
        acks=1, errors=0)


@pytest.mark.parametrize("bad, expect_errno, expect_message", [
    # The kernel gives no text for a name in use (rtnl_newlink returns bare -EEXIST).
    (veth_pair("va003", "vx057"), errno.EEXIST, None),
    (veth_pair("v" * 20, "vx057"), errno.ERANGE, "Attribute failed policy validation"),
], ids=["duplicate-name", "name-too-long"])
def test_failed_request_is_reported_at_its_index_and_the_rest_apply(
        rtnl, bad, expect_errno, expect_message):
    requests = [veth_pair(a, b) for a, b in pair_names(100)]
    requests[57] = bad

    result = rtnl.transact(requests)

    failed = [i for i, e in enumerate(result.errors) if e is not None]
    assert failed == [57]
    error = result.errors[57]
    assert isinstance(error, NetlinkError)
    assert (error.errno, error.kernel_message, error.index, error.tag) == (
        expect_errno, expect_message, 57, bad.tag)
    assert error.msg_type == RTM_NEWLINK and "RTM_NEWLINK #57" in str(error)
    before = rtnl.counters.copy()
    links, _ = read_links(rtnl, kind="veth")
    created = {n for n, link in links.items() if link["group"] == GROUP}
    assert created == {n for i, pair in enumerate(pair_names(100)) if i != 57 for n in pair}
    assert (rtnl.counters.acks, rtnl.counters.errors) == (1, 1)
    assert rtnl.counters.since(before).sendmsg_calls == 1   # the dump just above


def test_every_error_is_kept_when_they_outgrow_a_small_receive_buffer():
    # 64 KiB (doubled by the kernel) holds ~80 errors: transact must read
    # them between sendmsg calls or the kernel drops them (ENOBUFS).
    with RtnlSocket.open(rcvbuf=64 << 10) as rtnl:
        assert rtnl.rcvbuf == 128 << 10
        result = rtnl.transact([veth_pair(f"{'x' * 16}{i:03d}", f"p{i:03d}") for i in range(PAIRS)])
        assert [e.errno for e in result.errors] == [errno.ERANGE] * PAIRS
        assert [e.index for e in result.errors] == list(range(PAIRS))
        assert rtnl.counters.errors == PAIRS and rtnl.counters.acks == 1
        assert rtnl.counters.sendmsg_calls == 4   # 64 errors' worth per sendmsg


def test_single_request_raises_with_the_kernel_message(rtnl):
    with pytest.raises(NetlinkError) as caught:
        rtnl.request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL,
                     ifinfomsg() + rtattr_str(IFLA_IFNAME, "v" * 20) + linkinfo("veth"))
    assert caught.value.errno == errno.ERANGE
    assert caught.value.kernel_message == "Attribute failed policy validation"
    assert caught.value.index is None


# --- kernel-filtered dumps ------------------------------------------------------
def test_dump_by_kind_returns_only_that_kind_and_says_the_kernel_filtered(rtnl):
    create_pairs(rtnl, 20)
    bridge = Request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL,
                     ifinfomsg() + rtattr_str(IFLA_IFNAME, "br0") + rtattr_u32(IFLA_GROUP, GROUP)
                     + linkinfo("bridge"))
    rtnl.transact([bridge]).raise_first()

    veths, filtered = read_links(rtnl, kind="veth")
    assert filtered
    assert len(veths) == 40 and {link["kind"] for link in veths.values()} == {"veth"}
    bridges, filtered = read_links(rtnl, kind="bridge")
    assert filtered and list(bridges) == ["br0"]

    # A kind the kernel does not know (no module) is no filter at all: the
    # kernel sends every link, unflagged, so the caller must filter itself.
    everything, filtered = read_links(rtnl, kind="nosuchkind")
    assert not filtered and "lo" in everything and "br0" in everything


def test_empty_link_dump_counts_as_filtered(rtnl):
    # Link dumps flag only the links they send; an empty one can only be a
    # filtered one (lo is always there).
    links, filtered = read_links(rtnl, master=999999)
    assert links == {} and filtered


def test_dump_by_master_returns_exactly_the_ports(rtnl):
    names = create_pairs(rtnl, 20)
    rtnl.transact([Request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL,
                           ifinfomsg() + rtattr_str(IFLA_IFNAME, "br0")
                           + rtattr_u32(IFLA_GROUP, GROUP) + linkinfo("bridge"))]).raise_first()
    links, _ = read_links(rtnl)
    bridge = links["br0"]["index"]
    ports = [a for a, _b in names[:10]]
    # Half through RTM_SETLINK, half through RTM_NEWLINK on an index (what `ip link set` sends).
    enslave = [Request(RTM_SETLINK if i % 2 else RTM_NEWLINK, 0,
                       ifinfomsg(index=links[name]["index"]) + rtattr_u32(IFLA_MASTER, bridge))
               for i, name in enumerate(ports)]
    rtnl.transact(enslave).raise_first()

    members, filtered = read_links(rtnl, master=bridge)
    assert filtered
    assert sorted(members) == sorted(ports)
    assert {link["master"] for link in members.values()} == {bridge}
    assert sorted(link["ifname"] for link in ip_json("link", "show", "master", "br0")) == ports


def test_addresses_added_in_a_batch_and_dumped_by_ifindex(rtnl):
    names = create_pairs(rtnl, 50)
    links, _ = read_links(rtnl, kind="veth")
    requests = []
    for i, (a, _b) in enumerate(names):
        addr = ipaddress.IPv4Address(f"10.1.{i}.1").packed
        requests.append(Request(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL,
                                ifaddrmsg(AF_INET, 24, links[a]["index"])
                                + rtattr(IFA_LOCAL, addr) + rtattr(IFA_ADDRESS, addr), tag=a))
    assert rtnl.transact(requests).ok

    index = links["va007"]["index"]
    dump = rtnl.dump(RTM_GETADDR, getaddr_dump(AF_INET, index))
    found = []
    for _type, _flags, payload in dump:
        ifa_index = IFADDRMSG.unpack_from(payload)[4]
        local = parse_attrs(payload, IFADDRMSG.size, {IFA_LOCAL})[IFA_LOCAL]
        found.append((ifa_index, str(ipaddress.IPv4Address(bytes(local)))))
    assert dump.filtered and found == [(index, "10.1.7.1")]
    peer_view = ip_json("-4", "address", "show", "dev", "va007")[0]["addr_info"]
    assert [(a["local"], a["prefixlen"]) for a in peer_view] == [("10.1.7.1", 24)]


def test_routes_added_in_a_batch_and_dumped_by_table(rtnl):
    names = create_pairs(rtnl, 50)
    links, _ = read_links(rtnl, kind="veth")
    table = 1000      # above 255: only RTA_TABLE can say it
    up = [Request(RTM_NEWLINK, 0, ifinfomsg(index=links[n]["index"], flags=IFF_UP, change=IFF_UP))
          for pair in names for n in pair]
    routes = [Request(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL,
                      rtmsg(AF_INET, 24, table, RTPROT_STATIC, RT_SCOPE_LINK, RTN_UNICAST)
                      + rtattr(RTA_DST, ipaddress.IPv4Address(f"10.200.{i}.0").packed)
                      + rtattr_u32(RTA_OIF, links[a]["index"]) + rtattr_u32(RTA_TABLE, table))
              for i, (a, _b) in enumerate(names)]
    assert rtnl.transact(up + routes).ok

    def dump_routes(**filters):
        dump = rtnl.dump(RTM_GETROUTE, getroute_dump(AF_INET, **filters))
        out = set()
        for _type, _flags, payload in dump:
            attrs = parse_attrs(payload, RTMSG.size, {RTA_DST, RTA_OIF, RTA_TABLE})
            dst_len = RTMSG.unpack_from(payload)[1]
            out.add((f"{ipaddress.IPv4Address(bytes(attrs[RTA_DST]))}/{dst_len}",
                     attr_u32(attrs[RTA_OIF]), attr_u32(attrs[RTA_TABLE])))
        return out, dump.filtered

    in_table, filtered = dump_routes(table=table)
    assert filtered
    assert in_table == {(f"10.200.{i}.0/24", links[a]["index"], table)
                        for i, (a, _b) in enumerate(names)}
    one, filtered = dump_routes(table=table, oif=links["va009"]["index"])
    assert filtered and one == {("10.200.9.0/24", links["va009"]["index"], table)}
    assert len(ip_json("route", "show", "table", str(table))) == 50
    # A table that does not exist is an error for a filtered IPv4 dump, not an empty answer.
    with pytest.raises(NetlinkError) as caught:
        dump_routes(table=table + 1)
    assert caught.value.errno == errno.ENOENT


def test_abandoned_dump_leaves_the_socket_usable(rtnl):
    create_pairs(rtnl, 100)
    closed = iter(rtnl.dump(RTM_GETLINK, getlink_dump(kind="veth")))
    next(closed)
    closed.close()                                  # read a message, then gave up
    half_read = iter(rtnl.dump(RTM_GETLINK, getlink_dump(kind="veth")))
    next(half_read)                                 # still open when the next request goes
    rtnl.dump(RTM_GETLINK, getlink_dump())          # never iterated at all
    links, filtered = read_links(rtnl, kind="veth")
    assert len(links) == 200 and filtered
    with pytest.raises(RuntimeError, match="incomplete"):
        next(half_read)


def test_dump_stopped_in_its_last_datagram_does_not_wait_for_its_end_again(rtnl):
    # IPv6 address dumps send NLMSG_DONE in the datagram of their last
    # objects (link and IPv4 dumps send it alone: RTNL_FLAG_DUMP_SPLIT_NLM_DONE).
    rtnl.sock.settimeout(5)       # a wait for an end already read fails instead of hanging
    before = rtnl.counters.copy()
    addresses = iter(rtnl.dump(RTM_GETADDR, getaddr_dump(AF_INET6)))
    if next(addresses, None) is None:
        pytest.skip("no IPv6 address in the sandbox (lo down or IPv6 disabled)")
    addresses.close()
    assert rtnl.counters.since(before).recv_calls == 1
    links, filtered = read_links(rtnl)
    assert "lo" in links and not filtered


def test_dump_interrupted_by_a_change_raises_after_its_end_and_a_retry_reads_all(rtnl):
    create_pairs(rtnl, 100)
    with RtnlSocket.open() as writer:
        dump = rtnl.dump(RTM_GETLINK, getlink_dump(kind="veth"))
        messages = iter(dump)
        next(messages)          # the kernel has built the first datagram (~25 links)
        writer.transact([veth_pair("late0", "late1")]).raise_first()
        with pytest.raises(DumpInterrupted):
            for _message in messages:
                pass
    assert dump.done and dump.interrupted
    links, _ = read_links(rtnl, kind="veth")
    assert len(links) == 202 and "late0" in links


def test_socket_opened_in_another_namespace_serves_that_namespace(netns_dir, switcher):
    import socket as socket_mod
    ns = netns_dir.create("nltest")
    sock = switcher.socket_in(ns, socket_mod.AF_NETLINK, socket_mod.SOCK_RAW, 0)
    with RtnlSocket(sock) as there:
        there.transact([veth_pair("inside0", "inside1")]).raise_first()
        links, _ = read_links(there, kind="veth")
    assert sorted(links) == ["inside0", "inside1"]
    assert {link["ifname"] for link in ip_json("-n", "nltest", "link", "show")} == {
        "lo", "inside0", "inside1"}
    assert not any(link["ifname"] == "inside0" for link in ip_json("link", "show"))


# --- the numbers the design rests on (printed with -s) ---------------------------
def test_dump_cost_with_and_without_skip_stats(rtnl):
    create_pairs(rtnl, PAIRS // 2)
    seen = {}
    for label, mask in (("SKIP_STATS", RTEXT_FILTER_SKIP_STATS), ("with stats", 0)):
        c = rtnl.counters
        recv, received = c.recv_calls, c.bytes_received
        t = time.perf_counter()
        links, filtered = read_links(rtnl, kind="veth", ext_mask=mask)
        elapsed = time.perf_counter() - t
        assert len(links) == PAIRS and filtered
        seen[label] = (c.recv_calls - recv, c.bytes_received - received)
        print(f"\n200-link dump ({label}): {seen[label][0]} recv calls, "
              f"{seen[label][1]} bytes, {elapsed * 1e3:.1f} ms with parsing")
    assert seen["SKIP_STATS"][1] < seen["with stats"][1]


def test_group_delete_versus_one_by_one(rtnl):
    create_pairs(rtnl)
    c = rtnl.counters
    sends = c.sendmsg_calls
    t = time.perf_counter()
    delete_group(rtnl, GROUP)
    by_group = time.perf_counter() - t
    assert c.sendmsg_calls - sends == 1
    links, _ = read_links(rtnl)
    assert not any(link["group"] == GROUP for link in links.values())

    names = create_pairs(rtnl)
    links, _ = read_links(rtnl, kind="veth")
    t = time.perf_counter()
    for a, _b in names:   # deleting one end of a veth deletes both
        rtnl.request(RTM_DELLINK, 0, ifinfomsg(index=links[a]["index"]))
    one_by_one = time.perf_counter() - t

    names = create_pairs(rtnl)
    links, _ = read_links(rtnl, kind="veth")
    t = time.perf_counter()
    assert rtnl.transact([Request(RTM_DELLINK, 0, ifinfomsg(index=links[a]["index"]))
                          for a, _b in names]).ok
    one_by_one_batched = time.perf_counter() - t
    print(f"\ndelete {PAIRS} veth pairs: by group {by_group * 1e3:.1f} ms; one ACKed request each "
          f"{one_by_one * 1e3:.1f} ms; one RTM_DELLINK each in one batch "
          f"{one_by_one_batched * 1e3:.1f} ms")


def test_batch_create_versus_ip_batch(rtnl, tmp_path):
    script = tmp_path / "pairs.batch"
    script.write_text("".join(f"link add {a} group {OTHER_GROUP} type veth peer name {b} "
                              f"group {OTHER_GROUP}\n" for a, b in pair_names(PAIRS, "i")))
    ours, encode, theirs = [], [], []
    for _round in range(3):
        t = time.perf_counter()
        requests = [veth_pair(a, b) for a, b in pair_names(PAIRS)]
        t1 = time.perf_counter()
        assert rtnl.transact(requests).ok
        t2 = time.perf_counter()
        encode.append(t1 - t)
        ours.append(t2 - t1)
        delete_group(rtnl, GROUP)

        t = time.perf_counter()
        subprocess.run(["ip", "-batch", str(script)], check=True)
        theirs.append(time.perf_counter() - t)
        delete_group(rtnl, OTHER_GROUP)
    per_pair = {k: min(v) / PAIRS * 1e3 for k, v in
                (("ours", ours), ("encode", encode), ("ip", theirs))}
    print(f"\ncreate {PAIRS} veth pairs (best of 3): netcfg transact "
          f"{per_pair['ours']:.3f} ms/pair (+ {per_pair['encode']:.4f} ms/pair to encode); "
          f"`ip -batch` {per_pair['ip']:.3f} ms/pair (process start included)")
