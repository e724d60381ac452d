"""The hook lifecycle of a reload (issue 21 deliverable 2, issue 23 M3),
against the real kernel inside the sandbox (conftest.py): down lines of
removed and changed stanzas run, unchanged ones run nothing, a revert,
`netcfg down` and ifdown run the down lines. The lines add and delete `ip
rule`s (ifupdown2 #192's duplicates; Proxmox SDN's iptables pairs are the
same shape), read back with `ip -j rule`, and append to a log file for
the order they ran in."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import textwrap

import pytest

from netcfg.apply.execute import ApplyFailed, apply, down, revert
from netcfg.apply.hooks import HookSettings
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.ifupdown.main import main as ifupdown


def ip_json(*args: str):
    out = subprocess.run(["ip", "-j", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def link(name: str) -> dict | None:
    found = [ln for ln in ip_json("link", "show") if ln["ifname"] == name]
    return found[0] if found else None


def rules(table: int) -> list[dict]:
    """The host's policy rules that look up ``table`` (what the lines add)."""
    return [r for r in ip_json("rule", "show") if r.get("table") == str(table)]


def stanza(name: str, table: int, tag: str, log) -> str:
    return textwrap.dedent(f"""\
        auto {name}
        iface {name} inet static
            bridge-ports none
            address 10.77.{table % 250}.1/24
            post-up ip rule add from 10.77.{table % 250}.0/24 table {table}
            post-up echo "up {tag} $IFACE $MODE $PHASE" >> {log}
            post-down ip rule del from 10.77.{table % 250}.0/24 table {table}
            post-down echo "down {tag} $IFACE $MODE $PHASE" >> {log}
        """)


def compiled(tmp_path, text: str):
    path = tmp_path / "interfaces"
    path.write_text(text)
    return compile_config(ConfigSource(path=str(path))).model


@pytest.fixture
def setting(tmp_path):
    """This test's own record (never the sandbox's shared /run/netcfg one)."""
    return HookSettings(record=str(tmp_path / "run" / "hooks.json"))


@pytest.fixture
def cleanup():
    yield
    for name in ("hk0", "hk1"):
        subprocess.run(["ip", "link", "del", name], capture_output=True)
    for table in (100, 200):
        while subprocess.run(["ip", "rule", "del", "table", str(table)],
                             capture_output=True).returncode == 0:
            pass


def logged(log) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_a_reload_runs_the_down_lines_of_changed_and_removed_stanzas_once(
        tmp_path, session, setting, cleanup):
    log = tmp_path / "log"
    first = compiled(tmp_path, stanza("hk0", 100, "A", log) + stanza("hk1", 200, "K", log))
    assert apply(first, session, hooks=setting).verified
    assert logged(log) == ["up A hk0 start post-up", "up K hk1 start post-up"]
    assert len(rules(100)) == 1 and len(rules(200)) == 1
    index = link("hk0")["ifindex"]

    # Applied again unchanged: no line runs (ifupdown2 #192), no rule doubles.
    again = apply(first, session, hooks=setting)
    assert again.hooks == [] and len(logged(log)) == 2 and len(rules(100)) == 1

    # The record: versioned JSON, 0600, with hk0's down lines.
    record = tmp_path / "run" / "hooks.json"
    assert stat.S_IMODE(os.stat(record).st_mode) == 0o600
    data = json.loads(record.read_text())
    assert data["version"] == 1
    entry = next(e for e in data["interfaces"] if e["name"] == "hk0")
    assert ["post-down", "ip rule del from 10.77.100.0/24 table 100"] in entry["down"]

    # hk0's lines edited (tag A -> B): old post-down once, new post-up once,
    # hk1 untouched, and hk0 was not re-created or flapped.
    edited = compiled(tmp_path, stanza("hk0", 100, "B", log) + stanza("hk1", 200, "K", log))
    apply(edited, session, hooks=setting)
    assert logged(log)[2:] == ["down A hk0 stop post-down", "up B hk0 start post-up"]
    assert link("hk0")["ifindex"] == index and "UP" in link("hk0")["flags"]
    assert len(rules(100)) == 1 and len(rules(200)) == 1

    # Taken down outside netcfg: the repair brings it up again, and the
    # down lines run before the up lines, so the rule is not doubled (M3).
    subprocess.run(["ip", "link", "set", "hk0", "down"], check=True)
    apply(edited, session, hooks=setting)
    assert logged(log)[4:] == ["down B hk0 stop post-down", "up B hk0 start post-up"]
    assert len(rules(100)) == 1

    # hk0's stanza removed: its recorded post-down runs, its rule goes, the
    # device goes; hk1 runs nothing.
    removed = compiled(tmp_path, stanza("hk1", 200, "K", log))
    result = apply(removed, session, hooks=setting)
    assert logged(log)[6:] == ["down B hk0 stop post-down"]
    assert link("hk0") is None and rules(100) == [] and len(rules(200)) == 1
    assert "hk0: post-down 'ip rule del from 10.77.100.0/24 table 100': ok" in result.hooks
    # Applied unchanged again: nothing.
    assert apply(removed, session, hooks=setting).hooks == []
    assert len(logged(log)) == 7
    names = [e["name"] for e in json.loads(record.read_text())["interfaces"]]
    assert names == ["hk1"]


def test_a_post_up_edit_alone_runs_with_no_kernel_change(tmp_path, session, setting, cleanup):
    log = tmp_path / "log"
    apply(compiled(tmp_path, stanza("hk0", 100, "A", log)), session, hooks=setting)
    text = stanza("hk0", 100, "A", log) + f"    up echo extra >> {log}\n"
    result = apply(compiled(tmp_path, text), session, hooks=setting)
    assert result.plan.operations == []            # nothing for the kernel
    assert logged(log) == ["up A hk0 start post-up", "down A hk0 stop post-down", "extra",
                           "up A hk0 start post-up"]
    assert len(rules(100)) == 1


def test_revert_down_and_ifdown_run_the_down_lines(tmp_path, session, setting, cleanup,
                                                   monkeypatch):
    log = tmp_path / "log"
    model = compiled(tmp_path, stanza("hk0", 100, "A", log))
    # A verified apply reverted (an unconfirmed `apply --confirm`).
    result = apply(model, session, hooks=setting)
    with pytest.raises(ApplyFailed):
        revert(result, "not confirmed")
    assert logged(log) == ["up A hk0 start post-up", "down A hk0 stop post-down"]
    assert link("hk0") is None and rules(100) == []
    # Its up lines are due again: the next apply runs them.
    apply(model, session, hooks=setting)
    assert logged(log)[2:] == ["up A hk0 start post-up"] and len(rules(100)) == 1

    # `netcfg down`: hk0 (netcfg made it) goes, its down lines run.
    down(model, session, everything=True, hooks=setting)
    assert logged(log)[3:] == ["down A hk0 stop post-down"]
    assert link("hk0") is None and rules(100) == []

    # ifup -a then ifdown hk0 through the ifupdown commands (the default
    # record, in $NETCFG_RUN_DIR).
    monkeypatch.setenv("NETCFG_RUN_DIR", str(tmp_path / "netcfg-run"))
    monkeypatch.setenv("NETCFG_IFUPDOWN_STATE_DIR", str(tmp_path / "state"))
    path = tmp_path / "interfaces"
    assert ifupdown(["ifup", "-a", "-i", str(path)]) == 0
    assert ifupdown(["ifup", "-a", "-i", str(path)]) == 0      # nothing re-runs
    assert ifupdown(["ifdown", "hk0", "-i", str(path)]) == 0
    assert logged(log)[4:] == ["up A hk0 start post-up", "down A hk0 stop post-down"]
    assert link("hk0") is None and rules(100) == []
    assert os.path.exists(tmp_path / "netcfg-run" / "hooks.json")


# ---------------------------------------------------------------- if-*.d scripts

RECORD_ENV = """#!/bin/sh
{{ env | grep -E '^(IFACE|LOGICAL|ADDRFAM|METHOD|MODE|PHASE|VERBOSITY|IF_[A-Z_]+)=' | sort
   readlink /proc/self/ns/net; echo ---; }} >> {out}
"""


def script(directory, name: str, text: str, mode: int = 0o755) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    path.chmod(mode)


def calls(out) -> list[dict]:
    """Each call of the recording script: its environment, its namespace."""
    found = []
    for block in out.read_text().split("---\n")[:-1]:
        lines = block.splitlines()
        env = dict(line.split("=", 1) for line in lines[:-1])
        env["netns"] = lines[-1]
        found.append(env)
    return found


def test_if_d_scripts_run_once_per_family_in_the_namespace_and_never_hold_the_apply(
        tmp_path, session, cleanup):
    import time

    network = tmp_path / "network"
    out, marks = tmp_path / "calls", tmp_path / "marks"
    for phase in ("pre-up", "up", "post-down"):
        script(network / f"if-{phase}.d", "00record", RECORD_ENV.format(out=out))
    # Named like a built-in handler (bridge-utils' hook), a dpkg leftover, and
    # not executable: none of them may run.
    for name, mode in (("bridge", 0o755), ("x.dpkg-old", 0o755), ("plain", 0o644)):
        script(network / "if-up.d", name, f"#!/bin/sh\necho {name} >> {marks}\n", mode)
    # A script that starts a daemon: the apply must not wait for it.
    script(network / "if-up.d", "zz-daemon", "#!/bin/sh\nsleep 30 &\necho started\n")
    text = textwrap.dedent("""\
        netns red

        auto hk0
        iface hk0 inet static
            bridge-ports none
            address 10.78.0.1/24
            address 10.78.1.1/24
            mtu 1400
            wpa-ssid lab-net
        iface hk0 inet6 static
            address fd00:78::1/64

        auto hk1
        iface hk1 inet manual
            netns red
            bridge-ports none
        """)
    path = tmp_path / "interfaces"
    path.write_text(text)
    config = compile_config(ConfigSource(path=str(path)))
    # wpa-ssid is wpasupplicant's line: never in the model, handed to the scripts.
    settings = HookSettings(scripts_dir=str(network),
                            record=str(tmp_path / "run" / "h.json")).with_config(config)
    started = time.monotonic()
    result = apply(config.model, session, hooks=settings)
    took = time.monotonic() - started
    assert result.verified and took < 15, took
    assert "UP" in link("hk0")["flags"]
    assert not marks.exists()
    assert "hk0: up script " + str(network / "if-up.d" / "zz-daemon") + " (inet): started" \
        in result.hooks

    host = os.readlink("/proc/self/ns/net")
    red = subprocess.run(["ip", "netns", "exec", "red", "readlink", "/proc/self/ns/net"],
                         check=True, capture_output=True, text=True).stdout.strip()
    seen = calls(out)
    hk0 = [c for c in seen if c["IFACE"] == "hk0"]
    # pre-up and up, each once per family, never "inet,inet6".
    assert [(c["PHASE"], c["ADDRFAM"], c["METHOD"]) for c in hk0] == [
        ("pre-up", "inet", "static"), ("pre-up", "inet6", "static"),
        ("up", "inet", "static"), ("up", "inet6", "static")]
    first = hk0[0]
    assert first["LOGICAL"] == "hk0" and first["MODE"] == "start"
    assert first["IF_WPA_SSID"] == "lab-net"
    assert first["IF_ADDRESS"] == "10.78.0.1/24" and first["IF_MTU"] == "1400"
    assert first["netns"] == host
    assert first["IF_BRIDGE_PORTS"] == "none"
    hk1 = [c for c in seen if c["IFACE"] == "hk1"]
    assert [(c["PHASE"], c["ADDRFAM"], c["METHOD"], c["netns"]) for c in hk1] == [
        ("pre-up", "inet", "manual", red), ("up", "inet", "manual", red)]

    # Unchanged: no script runs again. hk0 removed: post-down with MODE=stop.
    out.unlink()
    assert apply(config.model, session, hooks=settings).hooks == []
    assert not out.exists()
    without = text[:text.index("auto hk0")] + text[text.index("auto hk1"):]
    apply(compiled(tmp_path, without), session, hooks=settings.with_config(None))
    assert [(c["IFACE"], c["PHASE"], c["ADDRFAM"], c["MODE"]) for c in calls(out)] == [
        ("hk0", "post-down", "inet", "stop"), ("hk0", "post-down", "inet6", "stop")]
    assert link("hk0") is None


def test_a_script_past_its_time_limit_is_killed_and_reported(tmp_path, session, cleanup):
    import time

    network = tmp_path / "network"
    script(network / "if-up.d", "slow", "#!/bin/sh\necho waiting\nsleep 60\n")
    settings = HookSettings(scripts_dir=str(network), record=str(tmp_path / "h.json"),
                            timeout_s=1)
    text = "auto hk0\niface hk0 inet manual\n    bridge-ports none\n"
    started = time.monotonic()
    result = apply(compiled(tmp_path, text), session, hooks=settings)
    assert time.monotonic() - started < 10
    assert result.verified and "UP" in link("hk0")["flags"]
    slow = str(network / "if-up.d" / "slow")
    assert f"hk0: up script {slow} (inet): waiting" in result.hooks
    assert f"hk0: up script {slow} (inet) failed (timed out)" in result.hooks


def _running(fragment: str) -> list[int]:
    """Pids whose command line holds ``fragment``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if fragment.encode() in f.read().replace(b"\0", b" "):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_l1_a_killed_apply_leaves_no_hook_running(tmp_path, cleanup):
    """adversarial-3 L1: `netcfg apply` SIGKILLed in a pre-up left that hook
    running as an orphan (the rest of its line ran later, beside the next
    apply's). Now the hook dies with the apply (setpriv --pdeathsig)."""
    import signal
    import sys
    import time

    started, later = tmp_path / "started", tmp_path / "later"
    line = f"sleep 3.21; touch {later}"
    path = tmp_path / "interfaces"
    path.write_text(f"auto hk0\niface hk0 inet static\n    bridge-ports none\n"
                    f"    address 10.77.3.1/24\n    pre-up touch {started}\n    pre-up {line}\n")
    client = subprocess.Popen([sys.executable, "-m", "netcfg", "apply", "-c", str(path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (started.exists() and _running(line)):
            assert client.poll() is None and time.monotonic() < deadline, "no pre-up ran"
            time.sleep(0.01)
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()
    deadline = time.monotonic() + 2
    while _running(line) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _running(line), "the killed apply's pre-up is still running"
    time.sleep(3.5)
    assert not later.exists(), "the rest of the killed apply's pre-up line ran later"
