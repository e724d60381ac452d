"""Network namespaces made in-process, checked against what the kernel and
iproute2 report (runs in the sandbox set up by conftest.py)."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import threading
import time

import pytest

from netcfg.kernel import ns
from netcfg.kernel.ns import NetnsDir, NetnsError


def netns_mounts() -> dict[str, str]:
    """mount point -> optional fields ("shared:N" ...), from /proc/self/mountinfo."""
    mounts = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            mounts[fields[4]] = " ".join(fields[6:fields.index("-")])
    return mounts


def socket_cookie(sock: socket.socket) -> int:
    return struct.unpack("=Q", sock.getsockopt(socket.SOL_SOCKET, ns.SO_NETNS_COOKIE, 8))[0]


def thread_netns_inode() -> int:
    return os.stat("/proc/thread-self/ns/net").st_ino


def link_names(links: list[dict]) -> set[str]:
    return {link["ifname"] for link in links}


def test_create_list_delete_as_iproute2_sees_it(netns_dir, ip_json):
    red, blue = netns_dir.create("red"), netns_dir.create("blue")
    assert netns_dir.list_names() == ["blue", "red"]
    assert sorted(n["name"] for n in ip_json("netns", "list")) == ["blue", "red"]
    assert "/run/netns/red" in netns_mounts()    # an nsfs bind mount, as `ip netns add` makes

    netns_dir.delete("red")
    assert netns_dir.list_names() == ["blue"]
    assert [n["name"] for n in ip_json("netns", "list")] == ["blue"]
    assert "/run/netns/red" not in netns_mounts()
    red.close()
    blue.close()


def test_the_calling_thread_stays_where_it_is(netns_dir):
    before = thread_netns_inode()
    with netns_dir.create("red") as red:
        assert thread_netns_inode() == before != red.identity.ino


def test_a_new_namespace_holds_only_lo(netns_dir, read_links):
    with netns_dir.create("red"):
        links = read_links("red")
    assert [(link["ifname"], link["operstate"]) for link in links] == [("lo", "DOWN")]


def test_a_device_made_inside_shows_in_that_namespace_only(netns_dir, read_links):
    with netns_dir.create("red") as red, netns_dir.create("blue") as blue:
        subprocess.run(["ip", "-n", "red", "link", "add", "vx0", "type", "vxlan",
                        "id", "5", "dstport", "4789"], check=True)
        assert "vx0" in link_names(read_links(red))
        assert "vx0" not in link_names(read_links(blue))
        assert "vx0" not in link_names(read_links(""))
        # iproute2 can enter what we made, the way operators will.
        out = subprocess.run(["ip", "netns", "exec", "red", "ip", "-j", "link", "show", "vx0"],
                             check=True, capture_output=True, text=True).stdout
        assert '"vx0"' in out


def test_identities_differ_and_reopening_finds_the_same(netns_dir):
    with netns_dir.create("red") as red, netns_dir.create("blue") as blue, \
            netns_dir.open("red") as red_again, netns_dir.open("") as root:
        assert red.identity != blue.identity != root.identity != red.identity
        assert red_again.identity == red.identity
        assert red.identity.durable    # this kernel has NS_GET_ID / SO_NETNS_COOKIE
        assert not red.is_stale() and not root.is_stale()


def test_identity_without_ns_get_id_comes_from_a_socket_inside(netns_dir, monkeypatch):
    # Kernels 5.14-6.17 (Debian 12's 6.1) have SO_NETNS_COOKIE but not NS_GET_ID.
    with netns_dir.create("red") as red:
        monkeypatch.setattr(ns, "NS_GET_ID", 0x8008B7FF)   # unknown to nsfs: ENOTTY
        with netns_dir.open("red") as red_again:
            assert red_again.identity == red.identity


def test_delete_and_recreate_never_repeats_an_identity(netns_dir):
    cookies, inodes, fds = set(), [], []
    old = netns_dir.create("tenant")
    for _ in range(200):
        cookies.add(old.identity.cookie)
        inodes.append(old.identity.ino)
        fds.append(old.fd)
        netns_dir.delete("tenant")
        assert old.is_stale()                      # deleted: the name leads nowhere
        new = netns_dir.create("tenant")
        assert old.is_stale()                      # recreated: the name leads elsewhere
        assert new.identity != old.identity
        with netns_dir.open("tenant") as reopened:
            assert reopened.identity == new.identity
        old.close()                                # now the kernel may free it
        old = new
    old.close()
    assert len(cookies) == 200
    assert len(set(fds)) < 200                     # fd numbers do come back
    print(f"\n200 recreations: {len(set(fds))} distinct fd numbers, "
          f"{len(inodes) - len(set(inodes))} nsfs inode numbers reused, cookies all distinct")


def test_invalid_names_are_refused_before_touching_anything(netns_dir):
    for bad in ("", ".", "..", "a/b", "x" * 65, "with space", "../etc"):
        with pytest.raises(NetnsError, match="invalid name"):
            netns_dir.create(bad)
    assert netns_dir.list_names() == []


def test_errors_name_the_namespace_and_the_errno(netns_dir):
    with netns_dir.create("red"):
        with pytest.raises(NetnsError, match=r"'red': cannot create .*File exists \(EEXIST\)"):
            netns_dir.create("red")
    with pytest.raises(NetnsError, match="netns 'nope': no such namespace"):
        netns_dir.open("nope")
    with pytest.raises(NetnsError, match="netns 'nope': no such namespace"):
        netns_dir.delete("nope")
    # A leftover file with nothing mounted on it (a crash between the two steps).
    open("/run/netns/leftover", "w").close()
    with pytest.raises(NetnsError, match="'leftover': .* is not a network namespace"):
        netns_dir.open("leftover")
    netns_dir.delete("leftover")
    assert netns_dir.list_names() == ["red"]


def test_create_many_is_all_or_none(netns_dir, ip_json):
    netns_dir.create("taken").close()
    with pytest.raises(NetnsError, match="'taken'"):
        netns_dir.create_many(["m1", "m2", "taken", "m3"])
    assert netns_dir.list_names() == ["taken"]
    assert [n["name"] for n in ip_json("netns", "list")] == ["taken"]


def test_a_plain_run_dir_becomes_a_shared_mount_point(tmp_path):
    run_dir = str(tmp_path / "netns")
    try:
        nsdir = NetnsDir(run_dir)
        with nsdir.create("red") as red:
            assert "shared:" in netns_mounts()[run_dir]
            assert f"{run_dir}/red" in netns_mounts()
            assert not red.is_stale()
        nsdir.delete("red")
        assert f"{run_dir}/red" not in netns_mounts()
    finally:
        subprocess.run(["umount", "--lazy", run_dir], check=True)


def test_sockets_from_socket_in_live_in_the_namespace(netns_dir, switcher):
    with netns_dir.create("red") as red, netns_dir.open("") as root:
        inside = switcher.socket_in(red, socket.AF_INET, socket.SOCK_DGRAM)
        outside = switcher.socket_in(root, socket.AF_INET, socket.SOCK_DGRAM)
        with inside, outside:
            assert socket_cookie(inside) == red.identity.cookie
            assert socket_cookie(outside) == root.identity.cookie
        with switcher.socket_in(red, socket.AF_NETLINK, socket.SOCK_RAW, 0) as nl:
            assert socket_cookie(nl) == red.identity.cookie
        assert switcher.call(red, thread_netns_inode) == red.identity.ino


def test_a_released_handle_comes_back_from_its_socket_and_knows_when_stale(netns_dir,
                                                                           switcher):
    red = netns_dir.create("red")
    inside = switcher.socket_in(red, socket.AF_NETLINK, socket.SOCK_RAW, 0)
    with inside:
        red.release()
        assert red.fd == -1 and not red.is_stale()
        fd = red.reacquire(inside)
        assert os.fstat(fd).st_ino == red.identity.ino
        assert switcher.call(red, thread_netns_inode) == red.identity.ino
        red.release()
        # The name now leads to another namespace: the socket still leads to
        # the old one, which the handle gives back, and says is stale.
        netns_dir.delete("red")
        with netns_dir.create("red") as again:
            assert red.is_stale()
            assert os.fstat(red.reacquire(inside)).st_ino == red.identity.ino != again.identity.ino
    red.close()
    assert red.closed and red.is_stale()


def test_sockets_in_many_namespaces_in_one_trip(netns_dir, switcher):
    spaces = [netns_dir.create(f"m{i}") for i in range(5)]
    try:
        made = switcher.sockets_in([*spaces, spaces[0]], socket.AF_INET, socket.SOCK_DGRAM)
        assert [socket_cookie(s) for s in made] == [n.identity.cookie
                                                     for n in [*spaces, spaces[0]]]
        for sock in made:
            sock.close()
        # One closed handle: nothing is made, nothing is left open.
        spaces[2].close()
        fds = len(os.listdir("/proc/self/fd"))
        with pytest.raises(NetnsError, match="'m2': the handle is closed"):
            switcher.sockets_in(spaces, socket.AF_INET, socket.SOCK_DGRAM)
        assert len(os.listdir("/proc/self/fd")) == fds
    finally:
        for netns in spaces:
            netns.close()


def test_the_switcher_skips_redundant_switches(netns_dir, switcher):
    with netns_dir.create("red") as red, netns_dir.create("blue") as blue, \
            netns_dir.open("") as root:
        switcher.call(root, int)
        assert switcher.setns_calls == 0         # it starts where it was made
        for _ in range(10):
            switcher.call(red, int)
        assert switcher.setns_calls == 1
        switcher.call(blue, int)
        switcher.call(red, int)
        assert switcher.setns_calls == 3
        # Same name, new namespace: the identity, not the name, decides.
        netns_dir.delete("red")
        with netns_dir.create("red") as red2:
            assert switcher.call(red2, thread_netns_inode) == red2.identity.ino
        assert switcher.setns_calls == 4


def test_the_switcher_hands_back_exceptions_and_goes_on(netns_dir, switcher):
    def fail():
        raise ValueError("inside red")

    with netns_dir.create("red") as red:
        with pytest.raises(ValueError, match="inside red"):
            switcher.call(red, fail)
        assert switcher.call(red, thread_netns_inode) == red.identity.ino
        with pytest.raises(NetnsError, match="would wait for itself"):
            switcher.call(red, switcher.call, red, int)
        closed = netns_dir.open("red")
        closed.close()
        with pytest.raises(NetnsError, match="'red': the handle is closed"):
            switcher.call(closed, int)
        switcher.close()
        with pytest.raises(NetnsError, match="closed"):
            switcher.call(red, int)


def test_the_switcher_serves_many_threads(netns_dir, switcher):
    spaces = [netns_dir.create(f"t{i}") for i in range(4)]
    wrong = []

    def worker(k: int) -> None:
        for j in range(50):
            target = spaces[(k + j) % len(spaces)]
            if switcher.call(target, thread_netns_inode) != target.identity.ino:
                wrong.append(target.name)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    for space in spaces:
        space.close()


def test_timing_100_namespaces_without_forking(netns_dir):
    names = [f"perf{i}" for i in range(100)]
    start = time.perf_counter()
    spaces = [netns_dir.create(name) for name in names]
    created = time.perf_counter()
    for space in spaces:
        space.close()
    netns_dir.delete_many(names)
    deleted = time.perf_counter()
    spaces = netns_dir.create_many(names)
    batch = time.perf_counter()
    for space in spaces:
        space.close()
    netns_dir.delete_many(names)
    print(f"\nper namespace: create {(created - start) * 10:.3f} ms, "
          f"delete {(deleted - created) * 10:.3f} ms, create_many {(batch - deleted) * 10:.3f} ms")
    assert created - start < 1.0
