"""The hook lifecycle's pure decisions (netcfg/plan/hooks.py), its record
(netcfg/apply/hookrecord.py), which if-*.d scripts run (apply/scripts.py)
and how one hook process is run (apply/hookproc.py). The kernel half is
tests/kernel/test_hooks_lifecycle.py."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest

from netcfg.apply import hookrecord
from netcfg.apply.hookproc import TIMED_OUT, run_hook
from netcfg.apply.hookrecord import Entry, Record, RecordError
from netcfg.apply.hooks import Stanza, stanza_environment
from netcfg.apply.scripts import scripts_for, skipped_because
from netcfg.model.model import ConfigObject
from netcfg.plan.hooks import lifecycle

A, B, C = ("", "a"), ("", "b"), ("red", "c")


# ---------------------------------------------------------------- lifecycle()

def test_unchanged_interfaces_run_nothing_even_when_the_plan_does_nothing():
    plan = lifecycle({A: "1", B: "2"}, {A: "1", B: "2"}, up=[])
    assert not plan


def test_a_removed_stanza_runs_its_recorded_down_lines_newest_first():
    plan = lifecycle({A: "1"}, {B: "2", A: "1", C: "3"}, up=[])
    assert plan.downs == (C, B) and not plan.cycles and not plan.ups


def test_changed_lines_cycle_and_a_repair_cycles_too():
    changed = lifecycle({A: "new"}, {A: "old"}, up=[])
    assert changed.cycles == (A,)
    # Up again after something took it down: old down lines, then up lines.
    repaired = lifecycle({A: "1"}, {A: "1"}, up=[A])
    assert repaired.cycles == (A,)
    # Pending (a failed pre-up, a revert): its up lines are due.
    assert lifecycle({A: "1"}, {A: hookrecord.PENDING}, up=[]).cycles == (A,)


def test_unknown_interfaces_come_up_or_are_adopted():
    plan = lifecycle({A: "1", B: "2"}, {}, up=[B])
    assert plan.ups == (B,) and plan.adopted == (A,)


def test_the_plan_order_comes_first():
    plan = lifecycle({A: "1", B: "2", C: "3"}, {}, up=[C, A])
    assert plan.ups == (C, A) and plan.adopted == (B,)


def test_unrecorded_interfaces_the_plan_takes_down_run_the_configs_down_lines():
    plan = lifecycle({}, {}, up=[], down=[A])
    assert plan.plan_downs == (A,)
    assert lifecycle({}, {A: "1"}, up=[], down=[A]).plan_downs == ()


# ---------------------------------------------------------------- the record

def entry(name: str = "br0", fingerprint: str = "f") -> Entry:
    return Entry("", name, name, fingerprint, (("post-down", "iptables -D X"),),
                 (("inet", "static"),), {"IF_ADDRESS": "10.0.0.1/24"}, {"post-down": "f:3"})


def test_the_record_round_trips_atomically_with_mode_0600(tmp_path):
    path = str(tmp_path / "run" / "hooks.json")
    record = Record()
    record.put(entry("a"))
    record.put(entry("b"))
    record.put(entry("a", "g"))   # came up again: now the newest
    hookrecord.save(path, record)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "run").st_mode) == 0o700
    again = hookrecord.load(path)
    assert list(again.entries) == [("", "b"), ("", "a")]
    assert again.entries[("", "a")] == entry("a", "g")
    assert os.listdir(tmp_path / "run") == ["hooks.json"]   # no temporary left


def test_no_record_is_empty_and_a_bad_one_is_a_located_error(tmp_path):
    assert hookrecord.load(str(tmp_path / "none.json")).entries == {}
    bad = tmp_path / "bad.json"
    for text, said in (("{", "cannot read"), ('{"version": 9}', "not a version 1"),
                       ('{"version": 1, "interfaces": [{"name": "x"}]}', "malformed")):
        bad.write_text(text)
        with pytest.raises(RecordError, match=said) as raised:
            hookrecord.load(str(bad))
        assert str(bad) in str(raised.value)


def test_the_record_is_json_never_pickle(tmp_path):
    path = tmp_path / "hooks.json"
    record = Record()
    record.put(entry())
    hookrecord.save(str(path), record)
    data = json.loads(path.read_text())
    assert data["version"] == 1 and data["interfaces"][0]["down"] == [
        ["post-down", "iptables -D X"]]


def test_a_down_line_edit_alone_does_not_change_the_fingerprint():
    obj = ConfigObject("iface", "br0", "bridge", attrs={
        "inet": "static", "address": ["10.0.0.1/24"], "post-up": ["iptables -A X"],
        "post-down": ["iptables -D X"]}, locs={"address": ("f", 2), "post-up": ("f", 3),
                                               "post-down": ("f", 4)})
    edited = ConfigObject("iface", "br0", "bridge", attrs={**obj.attrs,
                                                           "post-down": ["iptables -D Y"]},
                          locs=obj.locs)
    assert Stanza.of(obj).fingerprint() == Stanza.of(edited).fingerprint()
    moved = ConfigObject("iface", "br0", "bridge", attrs={**obj.attrs,
                                                          "address": ["10.0.0.2/24"]},
                         locs=obj.locs)
    # A setting the scripts see changed (resolvconf reads IF_DNS_*): it changes.
    assert Stanza.of(obj).fingerprint() != Stanza.of(moved).fingerprint()
    assert Stanza.of(edited).entry().down == (("post-down", "iptables -D Y"),)


# ---------------------------------------------------------------- environment

def test_scripts_get_one_family_lines_get_ifupdown2s_joined_form():
    obj = ConfigObject("iface", "eth0", "physical", attrs={
        "inet": "static", "inet6": "auto", "address": ["10.0.0.1/24", "fd00::1/64"],
        "dns-nameservers": ["192.0.2.53", "192.0.2.54"]},
        locs={"address": ("f", 2), "dns-nameservers": ("f", 3)})
    stanza = Stanza.of(obj)
    line = stanza_environment(stanza, "up", "post-up")
    assert line["ADDRFAM"] == "inet,inet6" and line["METHOD"] == "static"
    script = stanza_environment(stanza, "down", "pre-down", family=("inet6", "auto"))
    assert (script["ADDRFAM"], script["METHOD"], script["MODE"], script["PHASE"]) == (
        "inet6", "auto", "stop", "pre-down")
    assert script["IF_ADDRESS"] == "10.0.0.1/24"
    assert script["IF_DNS_NAMESERVERS"] == "192.0.2.53"


# ---------------------------------------------------------------- scripts

def test_run_parts_order_skipping_handlers_dpkg_files_and_non_executables(tmp_path):
    directory = tmp_path / "if-up.d"
    directory.mkdir()
    for name, mode in (("20b", 0o755), ("000resolvconf", 0o755), ("bridge", 0o755),
                       ("mtu", 0o755), ("ifenslave", 0o755), ("x.dpkg-old", 0o755),
                       ("y.dpkg-dist", 0o755), ("readme", 0o644), (".hidden", 0o755),
                       ("wpasupplicant", 0o755)):
        (directory / name).write_text("#!/bin/sh\n")
        (directory / name).chmod(mode)
    (directory / "subdir").mkdir()
    found = [os.path.basename(p) for p in scripts_for(str(tmp_path), "up")]
    assert found == ["000resolvconf", "20b", "wpasupplicant"]
    assert scripts_for(str(tmp_path), "pre-up") == []      # no such directory
    assert skipped_because("openvswitch") and skipped_because("vlan")
    assert skipped_because("ethtool") and skipped_because("bridgevlanport")
    assert skipped_because("ntpsec") is None


# ---------------------------------------------------------------- one process

def test_a_backgrounded_child_does_not_hold_the_hook(tmp_path):
    started = time.monotonic()
    code, output = run_hook(["/bin/sh", "-c", "sleep 20 & echo started"], dict(os.environ),
                            netns="", netns_dir=str(tmp_path), timeout_s=10)
    assert time.monotonic() - started < 5
    assert (code, output) == (0, "started\n")


def test_a_hook_past_its_time_limit_is_killed(tmp_path):
    started = time.monotonic()
    code, output = run_hook(["/bin/sh", "-c", "echo going; sleep 20"], dict(os.environ),
                            netns="", netns_dir=str(tmp_path), timeout_s=0.5)
    assert time.monotonic() - started < 5
    assert code == TIMED_OUT and output == "going\n(killed after 0.5 s)"


def test_a_missing_program_is_an_exit_status_not_a_traceback(tmp_path):
    code, output = run_hook([str(tmp_path / "nothing")], dict(os.environ), netns="",
                            netns_dir=str(tmp_path), timeout_s=1)
    # Said by Python when it cannot exec, or by setpriv (the pdeathsig wrapper).
    assert code == 127 and "nothing" in output and "No such file" in output


def test_lines_for_other_packages_hooks_reach_the_scripts():
    """wpa-* (wpasupplicant's hook) never enters the model: the scripts get
    them from the parsed stanzas (HookSettings.with_config)."""
    from netcfg.apply.hooks import HookSettings
    from netcfg.compile.pipeline import ConfigSource, compile_config

    compiled = compile_config(ConfigSource(path="-", stdin_text=(
        "auto wlan0\niface wlan0 inet dhcp\n    wpa-ssid lab-net\n    wpa-psk secret\n")))
    settings = HookSettings(record=None).with_config(compiled)
    obj = compiled.model.interfaces[("", "wlan0")]
    env = stanza_environment(Stanza.of(obj, settings.hook_lines.get(obj.key)), "up", "pre-up",
                             family=("inet", "dhcp"))
    assert env["IF_WPA_SSID"] == "lab-net" and env["IF_WPA_PSK"] == "secret"
    assert env["METHOD"] == "dhcp"
