"""The rollout playbook (netcfg.fleet.rollout) over 20 fake hosts
(fakehosts.py) by ansible-core over real SSH.

One scenario, in order, since each step starts from the state the previous one
left: a config that cuts host 3's management address stops the rollout at host
3, which netcfgd reverts by itself (its kernel state read back equals the
state before) while hosts 4-20 are untouched; the fixed config converges on all
20; a rerun changes nothing.
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ANSIBLE_VENV, REPO, SSHD, ansible_env
from fakehosts import GATEWAY, PREFIX, TEMPLATE, Fleet, mgmt_address, wait

HOSTS = 20
BAD_HOST = 3
# Seconds a change waits for its confirmation: it must cover the probes of a
# whole batch. The first rollout stops in the canaries (batches of one host),
# so a short deadline serves it and host 3 reverts soon; the full rollouts
# have batches of 5 on a loaded 2-core machine.
CANARY_CONFIRM_TIMEOUT = 30
CONFIRM_TIMEOUT = 90
# The playbook's own batches: three canaries, then a quarter of the fleet at
# a time (1, 1, 1, 5, 5, 5, 2).
SERIAL = None

def host_vars(number: int, tenants: list[str]) -> dict:
    return {"mgmt_address": f"{mgmt_address(number)}/{PREFIX}", "host": number,
            "tenants": tenants}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fleet")
    started = time.monotonic()
    hosts = Fleet(tmp, HOSTS, SSHD)
    try:
        hosts.start({"fleet.tmpl": TEMPLATE}, lambda n: host_vars(n, ["red"]))
        print(f"\n{HOSTS} fake hosts up in {time.monotonic() - started:.1f} s")
        yield hosts
    finally:
        print(f"hosts' CPU (netcfgd, sshd and what they ran): "
              f"{sum(h.cpu_seconds() for h in hosts.hosts):.1f} s")
        hosts.stop()


def write_inventory(path: Path, fleet: Fleet, config_dir: Path, overrides: dict[int, dict]):
    """The operator's inventory: each host's management address; the config
    and the rollout's settings for the group."""
    hosts = {}
    for host in fleet.hosts:
        hosts[host.name] = {"ansible_host": host.address,
                            "netcfg_mgmt_address": f"{host.address}/{PREFIX}",
                            "netcfg_host_number": host.number,
                            **overrides.get(host.number, {})}
    inventory = {"all": {"children": {"netcfg": {"hosts": hosts, "vars": {
        "ansible_user": "root",
        "ansible_ssh_private_key_file": str(fleet.client_key),
        "ansible_python_interpreter": str(REPO / ".venv/bin/python"),
        "ansible_remote_tmp": "/run/ansible-tmp",
        "rollout_src": str(config_dir),
        "rollout_vars": {"mgmt_address": "{{ netcfg_mgmt_address }}",
                         "host": "{{ netcfg_host_number }}",
                         "tenants": ["red", "blue"]},
        "rollout_confirm_timeout": CONFIRM_TIMEOUT,
        "rollout_probe_gateway": GATEWAY,
        "rollout_probe_timeout": 10,
        "rollout_executable": str(REPO / ".venv/bin/netcfg"),
    }}}}}
    path.write_text(json.dumps(inventory, indent=1))   # JSON is YAML


def rollout(home: Path, inventory: Path, confirm_timeout: float = CONFIRM_TIMEOUT,
            serial: list | None = SERIAL, options: tuple[str, ...] = ()
            ) -> tuple[int, str, dict, float]:
    """ansible-playbook netcfg.fleet.rollout: (exit code, output, recap by
    host, seconds)."""
    env = ansible_env(home)
    env.update({
        "ANSIBLE_PIPELINING": "1",
        "ANSIBLE_FORKS": "20",
        "ANSIBLE_HOST_KEY_CHECKING": "0",
        "ANSIBLE_TIMEOUT": "30",
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(home / "cp"),
        # Keep connections (ControlPersist) between tasks; a connection whose
        # peer went silent (its address removed) is dropped after ~8 s; not
        # sooner, or a host slow to answer on a loaded machine counts as cut off.
        "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=120s "
                            "-o ServerAliveInterval=2 -o ServerAliveCountMax=4 "
                            "-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no",
    })
    started, cpu = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([str(ANSIBLE_VENV / "bin/ansible-playbook"), "-i", str(inventory),
                           "netcfg.fleet.rollout", *options,
                           "-e", json.dumps({"rollout_confirm_timeout": confirm_timeout,
                                             **({"rollout_serial": serial} if serial else {})})],
                          capture_output=True, text=True, env=env, cwd=home, timeout=400)
    seconds = time.monotonic() - started
    output = done.stdout + done.stderr
    recap = {m["host"]: {k: int(v) for k, v in m.groupdict().items() if k != "host"}
             for m in re.finditer(r"^(?P<host>h\d\d)\s+: ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)"
                                  r"\s+unreachable=(?P<unreachable>\d+)\s+failed=(?P<failed>\d+)",
                                  output, re.M)}
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"ansible-playbook: exit {done.returncode} in {seconds:.1f} s, controller CPU "
          f"{after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime:.1f} s")
    return done.returncode, output, recap, seconds


def settled_state(host) -> dict | None:
    """host.state(), or None while a namespace goes away under the reading."""
    try:
        return host.state()
    except RuntimeError:
        return None


def tenants_on(host) -> set[str]:
    return {p.name for p in host.root("/run/netns").iterdir()}


def test_bad_config_stops_at_host_3_which_reverts_then_good_config_converges(
        fleet, installed_collection, ansible_home, tmp_path):
    config = tmp_path / "netcfg"
    config.mkdir()
    (config / "fleet.tmpl").write_text(TEMPLATE)
    inventory = tmp_path / "inventory.yml"
    before = {h.number: h.state() for h in fleet.hosts}
    files_before = {h.number: h.config_files() for h in fleet.hosts}

    # 1. Host 3's address in the inventory is wrong: the change removes the
    # address its SSH connection uses.
    write_inventory(inventory, fleet, config,
                    {BAD_HOST: {"netcfg_mgmt_address": f"10.77.1.{10 + BAD_HOST}/{PREFIX}"}})
    code, output, recap, seconds = rollout(ansible_home, inventory, CANARY_CONFIRM_TIMEOUT)
    bad_run_ended = time.monotonic()
    print(f"rollout stopped at host {BAD_HOST}: {seconds:.1f} s")
    assert code != 0, output
    assert re.search(rf"fatal: \[h0{BAD_HOST}\].*unreachable during the apply", output), output
    assert recap[f"h0{BAD_HOST}"]["failed"] == 1, output
    assert sorted(recap) == ["h01", "h02", "h03"], output     # later batches never started
    bad = fleet.hosts[BAD_HOST - 1]
    # The change is in (the management address replaced), waiting for a
    # confirmation that cannot come.
    assert bad.status()["daemon"]["trial"] is not None
    mgmt0 = {link[0]: link[5] for link in bad.state()["(host)"]["links"]}["mgmt0"]
    assert mgmt0 == (f"10.77.1.{10 + BAD_HOST}/{PREFIX}",), mgmt0
    for host in fleet.hosts[:BAD_HOST - 1]:        # the canaries before it took the change
        assert tenants_on(host) == {"red", "blue"}, host.name
        assert recap[host.name]["failed"] == 0 and recap[host.name]["changed"] >= 1
    for host in fleet.hosts[BAD_HOST:]:            # the hosts after it were not touched
        assert host.state() == before[host.number], host.name
        assert host.config_files() == files_before[host.number], host.name

    # 2. The inventory fixed. Check mode, while host 3 waits for its revert,
    # on a host that has the change and two that do not: the plan as a diff,
    # and nothing changed.
    write_inventory(inventory, fleet, config, {})
    sample = [fleet.hosts[1], fleet.hosts[3], fleet.hosts[4]]
    code, output, recap, seconds = rollout(
        ansible_home, inventory, serial=[HOSTS],
        options=("--check", "--diff", "--limit", ",".join(h.name for h in sample)))
    assert code == 0, output
    assert {name: r["changed"] for name, r in recap.items()} == {"h02": 0, "h04": 1, "h05": 1}
    assert "+ netns-add blue" in output and "+ addr-add v-blue 10.4.2.1/30" in output, output
    assert "+ addr-add mgmt0" not in output, output
    assert all(h.state() == before[h.number] for h in sample[1:])
    assert all(h.status()["daemon"]["trial"] is None for h in sample)
    print(f"check mode on {len(sample)} hosts: {seconds:.1f} s")

    # Host 3's netcfgd reverts it by itself, at the deadline: the address is
    # back and the host's whole state equals the state before.
    wait(lambda: settled_state(bad) == before[BAD_HOST], CANARY_CONFIRM_TIMEOUT + 15,
         "host 3's revert")
    print(f"host {BAD_HOST} reverted by itself {time.monotonic() - bad_run_ended:.1f} s after "
          f"the playbook ended")
    status = bad.status()
    assert status["daemon"]["trial"] is None and status["daemon"]["config"] == "/etc/netcfg"
    assert bad.config_files() == files_before[BAD_HOST]

    # 3. The rollout goes over all 20.
    code, output, recap, seconds = rollout(ansible_home, inventory)
    assert code == 0, output
    assert sorted(recap) == [h.name for h in fleet.hosts]
    assert all(r["failed"] == 0 and r["unreachable"] == 0 for r in recap.values()), output
    for host in fleet.hosts:
        assert tenants_on(host) == {"red", "blue"}, host.name
        blue = host.state()["blue"]["links"]
        assert ("eth0", "veth", True, 1500, "", (f"10.{host.number}.2.2/30",)) in blue
        mgmt = ("mgmt0", "veth", True, 1500, "", (f"{host.address}/{PREFIX}",))
        assert mgmt in host.state()["(host)"]["links"], host.name
        assert json.loads(host.config_files()["vars.json"])["tenants"] == ["red", "blue"]
        status = host.status()
        assert status["daemon"]["config"] == "/etc/netcfg" and status["daemon"]["trial"] is None
    assert all(recap[h.name]["changed"] >= 1 for h in fleet.hosts[BAD_HOST - 1:]), output
    print(f"good rollout over {HOSTS} hosts: {seconds:.1f} s")

    # 4. Again: nothing to do anywhere.
    code, output, recap, seconds = rollout(ansible_home, inventory)
    assert code == 0, output
    assert sorted(recap) == [h.name for h in fleet.hosts]
    assert all(r["changed"] == 0 and r["failed"] == 0 for r in recap.values()), output
    print(f"no-op rerun over {HOSTS} hosts: {seconds:.1f} s")
