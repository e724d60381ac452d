"""netcfgd and a tunnel whose `tunnel-local-dev` device has no address (a
lost DHCP lease, a link flap): the tunnel is left as the kernel has it and
retried with backoff, the rest of its namespace is repaired meanwhile, and
the reason is logged once; the CLI still refuses the whole apply at the line
(apply/tunnel_local.py, netcfgd/reconcile.py). Before, every pass over the
namespace failed and nothing there was repaired. This host kernel has no
tunnel modules: the tunnel itself is never made here (tests/vm/
test_vm_ng_tunnels.py makes it); here it is only not attempted while held.
"""

from __future__ import annotations

import subprocess
import textwrap

import pytest
from test_netcfgd import REPAIR_BOUND_S, addresses, cli, ip, link, wait_for
from test_netcfgd import make_daemon  # noqa: F401 - the fixture, shared

# eth0 is another program's veth (DHCP's, say), not in the file, with no
# address; gre1 takes its local address from it, br0 is next to it.
CONFIG = textwrap.dedent("""\
    auto br0
    iface br0
        bridge-ports none
        bridge-stp no
        address 10.9.0.1/24

    auto gre1
    iface gre1
        tunnel-mode gre
        tunnel-remote 198.51.100.1
        tunnel-local-dev eth0
        address 192.0.2.42/24
    """)
LINE = 11          # gre1's tunnel-local-dev line
WHY = "gre1: tunnel-local-dev eth0: eth0 has no IPv4 address now"


def host_status(daemon) -> dict:
    return next(ns for ns in daemon.status()["namespaces"] if ns["name"] == "")


@pytest.fixture
def eth0():
    ip("link", "add", "eth0", "type", "veth", "peer", "name", "eth0p")
    yield "eth0"
    subprocess.run(["ip", "link", "del", "eth0"], capture_output=True)


def test_a_tunnel_without_its_devices_address_is_held_and_the_rest_repaired(make_daemon, eth0):
    # `netcfg apply` refuses this file (below): the daemon starts on it alone.
    daemon = make_daemon(CONFIG, preapply=False)
    path = daemon.config / "a.tmpl"
    # The first full pass made the rest, the tunnel left out (not attempted).
    assert addresses("", "br0") == {"10.9.0.1/24"}
    status = host_status(daemon)
    assert status["error"] is None, status
    assert [line for line in status["hooks"] if line.startswith("gre1: left as it is: ")
            and f"{path}:{LINE}: error: {WHY}" in line], status["hooks"]
    # Drift next to the held tunnel is repaired.
    ip("address", "flush", "dev", "br0")
    wait_for(lambda: addresses("", "br0") == {"10.9.0.1/24"}, REPAIR_BOUND_S,
             "br0's address repaired while gre1 is held")
    # Retried with backoff (1 s, 2 s, 4 s: the third wait is 4 s), logged
    # once, at error level, located.
    wait_for(lambda: "retry in 3." in " ".join(host_status(daemon)["hooks"]), 10,
             "gre1's third try (its backoff grows)", step=0.05)
    said = [line for line in daemon.log.read_text().splitlines()
            if "gre1: left as it is" in line]
    assert len(said) == 1 and f"{path}:{LINE}: error: {WHY}" in said[0], said
    assert "ERROR" in said[0].split(" gre1")[0], said
    counters = daemon.counters()
    assert counters["passes_failed"] == 0 and counters["failures"] == 0, counters
    assert link("", "gre1") is None
    assert any("1 interfaces left as they are" in m for m in daemon.messages)   # STATUS=
    # The CLI is unchanged: the whole file refused at the line, exit 1.
    query = cli(daemon.run_dir, "query", "--check", "-c", str(daemon.config))
    assert query.returncode == 1, query.stdout + query.stderr
    assert f"{path}:{LINE}: error: {WHY}" in query.stderr
    # eth0 gets an address: the next try resolves it and makes gre1, which
    # this kernel cannot (no gre module): the pass now fails on gre1 itself.
    ip("address", "add", "10.8.0.1/24", "dev", "eth0")
    wait_for(lambda: host_status(daemon)["error"], 10, "gre1 attempted once eth0 has an address",
             step=0.05)
    assert "gre1" in host_status(daemon)["error"]


HELD = textwrap.dedent("""\
    auto b1
    iface b1
        bridge-ports none
        bridge-stp no
        mtu 1400
        address 10.7.0.1/24

    auto m1
    iface m1
        macvlan-raw-device b1
        macvlan-mode bridge
        address 10.6.0.1/24

    auto br0
    iface br0
        bridge-ports none
        bridge-stp no
        address 10.9.0.1/24
    """)


def test_a_device_held_as_it_is_is_what_the_kernel_has(session):
    """The hold itself, on a device this kernel can make (an empty bridge standing in
    for a tunnel made before its device lost its address): a pass neither
    repairs, downs nor re-creates it, nor makes it (or the macvlan on it)
    when it is gone, and repairs the rest; the hold over, it is repaired. A Reconciler in this
    process, its hooks' clock stopped so the hold lasts."""
    import logging

    from netcfg.compile.pipeline import ConfigSource, compile_config
    from netcfgd.hooks import NamespaceHooks
    from netcfgd.reconcile import Reconciler

    log = logging.getLogger("test")
    reconciler = Reconciler(session, log, NamespaceHooks(log))
    clock = [1000.0]
    reconciler.interface_hooks.clock = lambda: clock[0]
    reconciler.load(compile_config(ConfigSource(path="-", stdin_text=HELD)).model)
    assert reconciler.reconcile(None).failed == {}
    assert addresses("", "m1") == {"10.6.0.1/24"}
    made = link("", "b1")
    assert addresses("", "b1") == {"10.7.0.1/24"} and made["mtu"] == 1400
    reconciler.interface_hooks.unresolved(("", "b1"), "b1: stands in for a tunnel")
    ip("address", "flush", "dev", "b1")
    ip("link", "set", "b1", "mtu", "1300")
    ip("address", "flush", "dev", "br0")
    assert reconciler.reconcile({""}).failed == {}
    assert addresses("", "br0") == {"10.9.0.1/24"}            # the rest repaired
    now = link("", "b1")
    assert (now["ifindex"], now["mtu"], "UP" in now["flags"]) == (made["ifindex"], 1300, True)
    assert addresses("", "b1") == set()                       # as the kernel has it
    ip("link", "del", "b1")
    assert reconciler.reconcile({""}).failed == {}
    # Gone (m1 with it, as the kernel takes uppers away): neither is made.
    assert link("", "b1") is None and link("", "m1") is None
    ip("address", "flush", "dev", "br0")
    assert reconciler.reconcile({""}).failed == {}
    assert addresses("", "br0") == {"10.9.0.1/24"}
    assert link("", "b1") is None and link("", "m1") is None
    clock[0] += 2                                             # the retry: repaired
    assert reconciler.reconcile({""}).failed == {}
    assert addresses("", "b1") == {"10.7.0.1/24"} and link("", "b1")["mtu"] == 1400
    assert addresses("", "m1") == {"10.6.0.1/24"}
