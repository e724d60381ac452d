"""Hooks through netcfgd (issue 23 M3, issue 21): a repair of a link taken
down outside runs the recorded down lines before the up lines, so the
`ip rule` a post-up adds is never doubled; an `ifreload -a` through the
daemon that drops a stanza runs its post-down; `--network-dir` runs the
if-*.d scripts. State read back with `ip -j rule` and `ip -j link`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from kernel_env import remove_what_netcfg_made
from test_netcfgd import REPAIR_BOUND_S, Netcfgd, ip, link, wait_for


def rules(table: int) -> list[dict]:
    out = subprocess.run(["ip", "-j", "rule", "show"], check=True, capture_output=True,
                         text=True).stdout
    return [r for r in json.loads(out or "[]") if r.get("table") == str(table)]


def stanza(name: str, table: int, log) -> str:
    return textwrap.dedent(f"""\
        auto {name}
        iface {name} inet static
            bridge-ports none
            address 10.79.{table % 250}.1/24
            post-up ip rule add from 10.79.{table % 250}.0/24 table {table}
            post-up echo "up $IFACE" >> {log}
            post-down ip rule del from 10.79.{table % 250}.0/24 table {table}
            post-down echo "down $IFACE" >> {log}
        """)


def command(run_dir, network_dir, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netcfg.ifupdown", *argv], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "NETCFG_RUN_DIR": str(run_dir),
                               "NETCFG_NETWORK_DIR": str(network_dir),
                               "NETCFG_IFUPDOWN_STATE_DIR": str(run_dir / "state")})


@pytest.fixture
def daemons(netns_dir):
    started: list[Netcfgd] = []
    yield started
    for daemon in started:
        daemon.close()
    remove_what_netcfg_made(netns_dir)
    for table in (110, 120):
        while subprocess.run(["ip", "rule", "del", "table", str(table)],
                             capture_output=True).returncode == 0:
            pass


def test_netcfgd_repairs_and_reloads_keep_hook_pairs_balanced(tmp_path, daemons):
    log, calls = tmp_path / "log", tmp_path / "calls"
    network = tmp_path / "network"
    (network / "if-up.d").mkdir(parents=True)
    hook = network / "if-up.d" / "record"
    hook.write_text(f"#!/bin/sh\necho \"$IFACE $ADDRFAM $MODE\" >> {calls}\n")
    hook.chmod(0o755)
    path = tmp_path / "interfaces"
    path.write_text(stanza("hn0", 110, log) + stanza("hn1", 120, log))
    run = tmp_path / "run"
    daemon = Netcfgd(tmp_path, path, run_dir=run,
                     args=("--network-dir", str(network))).start()
    daemons.append(daemon)
    # Hooks run beside netcfgd's loop, one line after another: the rule can be
    # there before the next line (the log's) ran.
    wait_for(lambda: len(rules(110)) == 1 and len(rules(120)) == 1 and log.exists()
             and len(log.read_text().splitlines()) == 2 and calls.exists()
             and len(calls.read_text().splitlines()) == 2, REPAIR_BOUND_S,
             "netcfgd bringing hn0 and hn1 up with their post-up lines")
    assert sorted(calls.read_text().splitlines()) == ["hn0 inet start", "hn1 inet start"]

    # Taken down three times outside netcfg: each repair runs post-down then
    # post-up (before: a post-up per repair, rules piling up).
    for _ in range(3):
        seen = len(log.read_text().splitlines())
        ip("link", "set", "hn0", "down")
        wait_for(lambda: len(log.read_text().splitlines()) >= seen + 2
                 and "UP" in link("", "hn0")["flags"], REPAIR_BOUND_S, "netcfgd repairing hn0")
    assert len(rules(110)) == 1
    assert log.read_text().splitlines()[-2:] == ["down hn0", "up hn0"]

    # ifreload -a through the daemon with hn1's stanza dropped: its post-down
    # runs once, its rule goes; hn0 runs nothing.
    path.write_text(stanza("hn0", 110, log))
    before = log.read_text().splitlines()
    reload = command(run, network, "ifreload", "-a", "-i", str(path))
    assert reload.returncode == 0, reload.stderr
    assert link("", "hn1") is None and rules(120) == [] and len(rules(110)) == 1
    assert log.read_text().splitlines()[len(before):] == ["down hn1"]
