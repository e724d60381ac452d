"""A dead DHCP client is noticed by netcfgd (issue 23, L7): dhclient killed,
netcfgd restarts it at once (its pidfd woke the loop; no netlink event comes
from a client's death, and the resync is 10 min away), counts it in status,
and a client netcfgd stops on purpose (the interface made static) is no
death. A real dhclient against a real dnsmasq, the lease read back with
`ip addr` (tests/kernel/test_dhcp.py's set-up)."""

from __future__ import annotations

import os
import signal

from test_dhcp import CONFIG, client_addresses, private_etc, start_dnsmasq, wait_for_lease  # noqa: F401
from test_netcfgd import make_daemon, wait_for  # noqa: F401

from netcfg.apply import dhcp

# The restart: the pidfd wakes the loop, a 30 ms debounce, `ip netns exec
# dhclient -nw`. Loose for a loaded 2-core CI; without the watch it is the
# resync's 600 s.
RESTART_BOUND_S = 10.0
LEASE = dhcp.Lease("cli", "c0", "4")


def test_a_killed_dhcp_client_is_restarted_and_counted(tmp_path, private_etc, make_daemon,
                                                        monkeypatch):
    # The server's side first (dnsmasq needs s0), then the client's config.
    daemon = make_daemon(CONFIG.format(method="inet manual"), start=False)
    monkeypatch.setenv("NETCFG_RUN_DIR", str(daemon.run_dir))   # the daemon's clients
    server = start_dnsmasq(tmp_path)
    config = tmp_path / "etc" / "a.tmpl"
    try:
        config.write_text(CONFIG.format(method="inet dhcp"))
        daemon.start()
        leased = wait_for_lease()
        first = wait_for(lambda: dhcp.clients().pids().get(LEASE), RESTART_BOUND_S,
                         "netcfgd's dhclient for c0")
        assert daemon.counters()["dhcp_clients_died"] == 0

        os.kill(first, signal.SIGKILL)
        second = wait_for(lambda: (pid := dhcp.clients().pids().get(LEASE)) != first and pid,
                          RESTART_BOUND_S, "netcfgd restarting the killed dhclient")
        with open(f"/proc/{second}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        assert os.path.basename(argv[0]) == b"dhclient" and b"c0" in argv
        assert daemon.counters()["dhcp_clients_died"] == 1
        assert "(pid %d) exited; restarting it" % first in daemon.log.read_text()
        # The new client holds the lease (dnsmasq gives c0 the same address).
        assert wait_for_lease() == leased

        # Static again, through a reload: netcfgd stops the client itself,
        # which is not a death.
        config.write_text(CONFIG.format(method="inet static\n        address 10.77.0.9/24"))
        daemon.signal(signal.SIGHUP)
        wait_for(lambda: dhcp.clients().pids() == {} and client_addresses() == ["10.77.0.9/24"],
                 RESTART_BOUND_S, "netcfgd stopping the client on the reload")
        assert daemon.counters()["dhcp_clients_died"] == 1
        assert daemon.proc.poll() is None
    finally:
        daemon.close()
        dhcp.release(["", "srv", "cli"])
        server.terminate()
        server.wait(timeout=10)
