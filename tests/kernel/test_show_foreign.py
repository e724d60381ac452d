"""Issue 24, M12: what a tenant with CAP_NET_ADMIN writes into its devices
(an alias with newlines, a name with ESC) comes out of `netcfg show`'s
native form escaped in a comment, never as a line of its own nor as a raw
terminal sequence; applying the snapshot runs nothing. On 8f56453 the
alias's `post-up` line was printed as a stanza line and ran as root."""

from __future__ import annotations

import subprocess

import pytest
from clirun import netcfg_in_process as cli
from kernel_env import remove_what_netcfg_made


ALIAS = "tenant one\n    post-up touch {}\n#"


@pytest.fixture
def tenant(netns_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("NETCFG_RUN_DIR", str(tmp_path / "run"))
    subprocess.run(["ip", "netns", "add", "t1"], check=True)
    yield "t1"
    remove_what_netcfg_made(netns_dir)


def test_a_tenants_alias_and_name_come_out_escaped_and_apply_runs_nothing(tenant, tmp_path):
    pwned = tmp_path / "pwned"
    ip = ["ip", "-n", tenant, "link"]
    subprocess.run([*ip, "add", "br1", "type", "bridge"], check=True)
    subprocess.run([*ip, "set", "br1", "alias", ALIAS.format(pwned)], check=True)
    subprocess.run([*ip, "add", "x\x1b[2J", "type", "bridge"], check=True)

    code, out, err = cli("show", "--netns", tenant)
    assert code == 0, err
    assert "\x1b" not in out
    assert not [line for line in out.splitlines() if line.strip().startswith("post-up")]
    assert r"# alias left out: " in out and r"tenant one\x0a    post-up touch" in out
    assert r"# interface 'x\x1b[2J' in namespace 't1' left out" in out

    snapshot = tmp_path / "snap.tmpl"
    snapshot.write_text(out)
    code, _, err = cli("apply", "-c", str(snapshot))
    assert code == 0, err
    assert not pwned.exists()
