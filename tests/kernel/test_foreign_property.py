"""The foreign-device property (issue 24): whatever the config does not name
and netcfg did not make is never deleted, re-created, re-mastered, downed or
re-tagged.

Each example draws two configs from the soundness grammar
(soundness_configs.py: veths across the host and two namespaces netcfg
makes, bridges, macvlans, vxlans, addresses, routes) and a set of other
programs' devices: taps and bridges in the host namespace, veths whose other
end is in a namespace another tool made (`ip netns add`), a bridge in such a
namespace; a tap or the host end of a veth is sometimes a port of a bridge
the config declares (a guest on netcfg's bridge), sometimes of another
program's bridge. Config A is applied, the foreign devices are made, then:
A applied again, B applied, that apply reverted, a netcfgd pass
(an in-process Reconciler with A loaded) and `down --all`. After each step,
every foreign device is the same device (ifindex, MAC), in the same group,
on the same master, up or down as it was, with the same addresses, and every
foreign namespace is still there.

Out of the property, by design: namespaces netcfg made go with `down --all`,
and whatever another program put into them with them; `purge yes`
namespaces delete what they do not declare (the generator writes none).

`make test-kernel` runs FOREIGN_BOUNDED derandomized examples (~13 s here);
NETCFG_FOREIGN_EXAMPLES=2000 runs the recorded number with random seeds.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import subprocess
import tempfile
import textwrap
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kernel_env import RUN_DIR, remove_what_netcfg_made
from soundness_configs import configs

from netcfg.apply.execute import ApplyFailed, RevertFailed, apply, down, revert
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.kernel.ns import NetnsDir
from netcfg.kernel.session import KernelSession
from netcfg.model.errors import ConfigInvalid, NetcfgError

FOREIGN_BOUNDED = 40
EXAMPLES = int(os.environ.get("NETCFG_FOREIGN_EXAMPLES", FOREIGN_BOUNDED))
FOREIGN_NAMESPACES = ("zns1", "zns2")   # made by `ip netns add`, never by netcfg
TALLY: collections.Counter = collections.Counter()
NOT_APPLIED: collections.Counter = collections.Counter()   # why, when config A was not
FIRST_CONFIG: dict[str, str] = {}                          # and the first config it was


# ---------------------------------------------------------------- foreign devices

@st.composite
def foreign_devices(draw) -> list[dict]:
    """Specs of other programs' devices, made with ip after the first apply.
    ``master``: None, ("foreign", i) a foreign bridge, ("config", i) the i-th
    bridge the config declares in the host namespace (if there is one)."""
    bridges = draw(st.integers(0, 2))
    masters = st.one_of(st.none(), st.tuples(st.just("config"), st.integers(0, 2)),
                        *([st.tuples(st.just("foreign"), st.integers(0, bridges - 1))]
                          if bridges else []))
    specs: list[dict] = [{"kind": "bridge", "name": f"zbr{i}", "up": draw(st.booleans())}
                         for i in range(bridges)]
    for i in range(draw(st.integers(0, 3))):
        specs.append({"kind": "tap", "name": f"ztap{i}", "master": draw(masters),
                      "up": draw(st.booleans())})
    for i in range(draw(st.integers(0, 2))):
        specs.append({"kind": "veth", "name": f"zv{i}", "peer": f"zp{i}",
                      "netns": draw(st.sampled_from(FOREIGN_NAMESPACES)),
                      "master": draw(masters), "up": draw(st.booleans()),
                      "address": draw(st.sampled_from([None, f"198.18.{i}.1/24"]))})
    for netns in draw(st.lists(st.sampled_from(FOREIGN_NAMESPACES), max_size=2, unique=True)):
        specs.append({"kind": "inner-bridge", "name": "zin", "netns": netns})
    return specs


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def ip_json(*args: str):
    out = subprocess.run(["ip", "-j", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def make_foreign(specs: list[dict], config_bridges: list[str]) -> list[tuple[str, str]]:
    """Make the devices; returns (netns, name) of each foreign device to watch."""
    for netns in FOREIGN_NAMESPACES:
        ip("netns", "add", netns)
    watched = []

    def master_of(spec):
        master = spec.get("master")
        if master is None:
            return None
        where, index = master
        if where == "config":
            return config_bridges[index % len(config_bridges)] if config_bridges else None
        return f"zbr{index}"

    for spec in specs:
        kind, name = spec["kind"], spec["name"]
        if kind == "bridge":
            ip("link", "add", name, "type", "bridge")
        elif kind == "tap":
            ip("tuntap", "add", name, "mode", "tap")
        elif kind == "veth":
            ip("link", "add", name, "type", "veth", "peer", "name", spec["peer"],
               "netns", spec["netns"])
            ip("-n", spec["netns"], "link", "set", spec["peer"], "up")
            watched.append((spec["netns"], spec["peer"]))
            if spec["address"]:
                ip("addr", "add", spec["address"], "dev", name)
        elif kind == "inner-bridge":
            ip("-n", spec["netns"], "link", "add", name, "type", "bridge")
            watched.append((spec["netns"], name))
            continue
        master = master_of(spec)
        if master is not None:
            ip("link", "set", name, "master", master)
        if spec["up"]:
            ip("link", "set", name, "up")
        watched.append(("", name))
    return watched


def snapshot(watched: list[tuple[str, str]]) -> dict:
    """What must not change of each foreign device, read back with ip -j."""
    state: dict = {"namespaces": sorted(n for n in FOREIGN_NAMESPACES
                                        if os.path.exists(f"{RUN_DIR}/{n}"))}
    by_netns: dict[str, dict] = {}
    for netns in {n for n, _ in watched}:
        where = ["-n", netns] if netns else []
        try:
            by_netns[netns] = {d["ifname"]: d for d in ip_json(*where, "addr", "show")}
        except subprocess.CalledProcessError:
            by_netns[netns] = {}
    for netns, name in watched:
        dev = by_netns[netns].get(name)
        state[(netns, name)] = None if dev is None else (
            dev["ifindex"], dev.get("address"), dev.get("group"), dev.get("master"),
            "UP" in dev["flags"], dev.get("mtu"),
            sorted(f"{a['local']}/{a['prefixlen']}" for a in dev.get("addr_info", ())
                   if a["family"] == "inet"))
    return state


def remove_foreign(specs: list[dict]) -> None:
    for spec in specs:
        if spec["kind"] in ("tap", "veth"):
            subprocess.run(["ip", "link", "delete", spec["name"]], capture_output=True)
    for spec in specs:
        if spec["kind"] == "bridge":
            subprocess.run(["ip", "link", "delete", spec["name"]], capture_output=True)
    for netns in FOREIGN_NAMESPACES:
        subprocess.run(["ip", "netns", "delete", netns], capture_output=True)


# ---------------------------------------------------------------- the property

def _compile(text: str):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "net.tmpl"
        path.write_text(text)
        try:
            return compile_config(ConfigSource(path=str(path))).model
        except ConfigInvalid:
            return None


def _say(what: str, a: str, b: str, specs: list[dict], before: dict, after: dict) -> str:
    changed = {k: (before.get(k), after.get(k)) for k in before if before.get(k) != after.get(k)}
    return (f"{what} changed another program's devices: {changed}\n"
            f"--- foreign ---\n{json.dumps(specs)}\n--- config A ---\n{textwrap.indent(a, '  ')}"
            f"--- config B ---\n{textwrap.indent(b, '  ')}")


def _pass(model, session) -> None:
    """One netcfgd pass over every namespace, as the daemon runs it."""
    from netcfgd.hooks import NamespaceHooks
    from netcfgd.reconcile import Reconciler

    log = logging.getLogger("foreign-property")
    reconciler = Reconciler(session, log, NamespaceHooks(log))
    reconciler.load(model)
    reconciler.reconcile(None)


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          derandomize=EXAMPLES <= FOREIGN_BOUNDED, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture,
                                 HealthCheck.filter_too_much])
@given(a=configs(), b=configs(), specs=foreign_devices())
def test_other_programs_devices_never_change(a, b, specs, netns_dir):
    model_a, model_b = _compile(a), _compile(b)
    if model_a is None:
        TALLY["config refused"] += 1
    # Refused configs do not count as examples: hypothesis draws others.
    assume(model_a is not None)
    try:
        with KernelSession(RUN_DIR) as session:
            try:
                apply(model_a, session)
            except NetcfgError as e:
                # soundness's business, not this one's; what it was, for the record
                TALLY["config A not applied"] += 1
                why = str(e).split(": ", 2)[-1][:160]
                NOT_APPLIED[why] += 1
                FIRST_CONFIG.setdefault(why, a)
                return
            bridges = sorted(name for (netns, name), obj in model_a.interfaces.items()
                             if netns == "" and obj.kind == "bridge")
            watched = make_foreign(specs, bridges)
            first = snapshot(watched)

            def unchanged(what: str) -> None:
                now = snapshot(watched)
                assert now == first, _say(what, a, b, specs, first, now)

            try:
                apply(model_a, session)
            except NetcfgError:
                pass    # refused or reverted: the devices must still be as they were
            unchanged("apply A again")
            if model_b is not None:
                try:
                    result = apply(model_b, session)
                except NetcfgError:
                    result = None
                unchanged("apply B")
                if result is not None:
                    try:
                        revert(result, "property test")
                    except (ApplyFailed, RevertFailed):
                        pass
                    unchanged("revert of B")
            try:
                _pass(model_a, session)
            except NetcfgError:
                pass
            unchanged("a netcfgd pass")
            try:
                down(model_a, session, everything=True)
            except NetcfgError:
                pass
            unchanged("down --all")
            TALLY["checked"] += 1
            TALLY["foreign devices"] += len(watched)
    finally:
        remove_foreign(specs)
        remove_what_netcfg_made(NetnsDir(RUN_DIR))


def teardown_module(module) -> None:
    if TALLY:
        print(f"\nforeign property: {dict(TALLY)}")
    for why, count in NOT_APPLIED.most_common():
        print(f"config A not applied ({count}): {why}\n--- the first such config ---\n"
              f"{textwrap.indent(FIRST_CONFIG[why], '  ')}")
