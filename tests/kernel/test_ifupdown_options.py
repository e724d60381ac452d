"""ifupdown's and ifupdown-ng's options that netcfg took over in issue 22,
against the real kernel: `description` (ifupdown 0.8 runs `ip link set IF
alias TEXT`: netcfg's alias), `privext` and `accept_ra` (ifupdown's inet6
sysctls use_tempaddr and accept_ra), ifupdown-ng's `forward-ipv4`
(ip-forward), `inherits` (a stanza that starts from another's lines) and
`no-scripts`. Each is applied in the sandbox and read back from the
kernel (`ip -j`, /proc/sys); a second apply sends nothing; a change made by
hand is repaired; a changed value is written.
"""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from builders import compiled
from kernel_env import link_details

from netcfg.apply.execute import apply
from netcfg.compile.unsupported import InertLine, mpls_in_kernel, strict_errors
from netcfg.model.errors import ConfigInvalid

OPTIONS = textwrap.dedent("""\
    auto v0 v0p v1 v1p
    iface v0 inet static
        link-type veth
        veth-peer-name v0p
        address 192.0.2.10/24
        description uplink to the lab switch
        mtu 1400
        forward-ipv4 yes
    iface v0 inet6 static
        address 2001:db8::10/64
        privext 2
        accept_ra 0

    iface v0p inet manual

    iface v1 inet static inherits v0
        veth-peer-name v1p
        address 192.0.2.11/24
    iface v1 inet6 static inherits v0
        address 2001:db8::11/64

    iface v1p inet manual
    """)


def _sysctl(dev: str, name: str) -> str:
    with open(f"/proc/sys/net/ipv6/conf/{dev}/{name}") as f:
        return f.read().strip()


def _addresses(ip_json, dev: str) -> list[str]:
    return sorted(f"{a['local']}/{a['prefixlen']}" for a in ip_json("addr", "show", "dev", dev)[0]
                  ["addr_info"] if a.get("scope") != "link")


def test_ifupdown_options_reach_the_kernel(session, tmp_path, ip_json):
    result = apply(compiled(tmp_path, OPTIONS).model, session)
    assert result.verified and result.requests > 0
    # description: the kernel's alias of the link (IFLA_IFALIAS).
    assert link_details("v0").get("ifalias") == "uplink to the lab switch"
    assert _sysctl("v0", "use_tempaddr") == "2"
    assert _sysctl("v0", "accept_ra") == "0"
    assert _sysctl("v0p", "use_tempaddr") == "0"
    # ifupdown-ng's forward-ipv4: ip-forward.
    with open("/proc/sys/net/ipv4/conf/v0/forwarding") as f:
        assert f.read().strip() == "1"
    # inherits: v1 took v0's lines of each family first (veth, mtu, alias,
    # addresses; privext and accept_ra from the inet6 stanza), its own added.
    v1 = link_details("v1")
    assert v1["mtu"] == 1400 and v1.get("ifalias") == "uplink to the lab switch"
    assert link_details("v1p")["ifname"] == "v1p"
    assert _addresses(ip_json, "v1") == ["192.0.2.10/24", "192.0.2.11/24",
                                         "2001:db8::10/64", "2001:db8::11/64"]
    assert _sysctl("v1", "use_tempaddr") == "2" and _sysctl("v1", "accept_ra") == "0"

    # The same state asks for nothing: each is read back as it was written.
    assert apply(compiled(tmp_path, OPTIONS).model, session).requests == 0

    # Drift made by hand is repaired.
    subprocess.run(["sysctl", "-q", "-w", "net.ipv6.conf.v0.use_tempaddr=0"], check=True)
    subprocess.run(["ip", "link", "set", "v0", "alias", "other"], check=True)
    repaired = apply(compiled(tmp_path, OPTIONS).model, session)
    assert repaired.verified and repaired.requests > 0
    assert _sysctl("v0", "use_tempaddr") == "2"
    assert link_details("v0").get("ifalias") == "uplink to the lab switch"


def test_a_changed_value_is_written_and_a_removed_line_left_alone(session, tmp_path):
    """privext 2 -> 0 and accept_ra 0 -> 2 are written; a line taken out
    leaves the kernel's value as it is, as every attribute netcfg does not
    own (plan/diff.py: only what the config writes is managed, as ifupdown2)."""
    apply(compiled(tmp_path, OPTIONS).model, session)
    changed = OPTIONS.replace("privext 2", "privext 0").replace("accept_ra 0", "accept_ra 2")
    assert apply(compiled(tmp_path, changed).model, session).verified
    assert _sysctl("v0", "use_tempaddr") == "0" and _sysctl("v0", "accept_ra") == "2"
    assert apply(compiled(tmp_path, changed).model, session).requests == 0
    plain = "\n".join(line for line in OPTIONS.splitlines() if "accept_ra" not in line)
    assert apply(compiled(tmp_path, plain).model, session).verified
    assert _sysctl("v0", "use_tempaddr") == "2" and _sysctl("v0", "accept_ra") == "2"
    assert apply(compiled(tmp_path, plain).model, session).requests == 0


def test_privext_below_the_ipv6_mtu_is_refused_at_its_line(tmp_path):
    """Below an MTU of 1280 the kernel has no net.ipv6.conf.IF to write."""
    text = "auto v0\niface v0\n    link-type dummy\n    mtu 1000\n    privext 2\n"
    with pytest.raises(ConfigInvalid) as refused:
        compiled(tmp_path, text)
    errors = [d for d in refused.value.diagnostics if d.severity == "error"]
    assert [(d.loc.line, d.attribute) for d in errors] == [(5, "privext")], errors


MPLS = "auto d0\niface d0\n    link-type dummy\n    mpls-enable yes\n"


@pytest.mark.skipif(mpls_in_kernel(), reason="this kernel has MPLS: the line is refused there")
def test_mpls_enable_without_mpls_in_the_kernel_is_a_warning_at_its_line(tmp_path):
    """ifupdown-ng's mpls executor writes net.mpls.conf.IF.input only where the
    file exists; here (no mpls_router) the line does nothing: a warning, and
    --strict's error; the rest of the stanza applies."""
    result = compiled(tmp_path, MPLS)
    inert = [d for d in result.warnings if isinstance(d, InertLine)]
    assert [(d.loc.line, d.attribute) for d in inert] == [(4, "mpls-enable")]
    assert "mpls_router" in inert[0].message
    assert "mpls-enable" not in result.model.iface("", "d0").attrs
    assert [d.severity for d in strict_errors(inert)] == ["error"]


def test_ifupdown_ngs_vrrp_id_is_refused_with_the_vrrp_line_to_write(tmp_path):
    """`vrrp ID ADDRESS...` makes the VRRP macvlans (tests/kernel/test_vrrp.py);
    ifupdown-ng's executor variables vrrp-id/vrrp-address say the same in
    two lines netcfg does not pair: refused with the one line to write."""
    text = ("auto eth0\niface eth0\n    address 192.0.2.2/24\n"
            "    vrrp-id 10\n")
    with pytest.raises(ConfigInvalid) as refused:
        compiled(tmp_path, text)
    [error] = [d for d in refused.value.diagnostics if d.severity == "error"]
    assert (error.loc.line, error.attribute) == (4, "vrrp-id")
    assert "vrrp ID ADDRESS" in error.message


def test_no_scripts_skips_the_if_d_scripts_of_the_interfaces_it_names(tmp_path, session):
    """Debian ifupdown's `no-scripts NAME...` (its testcase.18): the if-*.d
    scripts do not run for those interfaces; their own up lines still do, and
    another interface's scripts run as before. Read back from what each
    script wrote, and the links brought up in the kernel."""
    from netcfg.apply.hooks import HookSettings
    from netcfg.compile.pipeline import ConfigSource, compile_config

    network, marks = tmp_path / "network", tmp_path / "marks"
    (network / "if-up.d").mkdir(parents=True)
    hook = network / "if-up.d" / "00mark"
    hook.write_text(f"#!/bin/sh\necho script $IFACE >> {marks}\n")
    hook.chmod(0o755)
    path = tmp_path / "interfaces"
    path.write_text(textwrap.dedent(f"""\
        auto d0 d1
        no-scripts d0
        iface d0 inet manual
            link-type veth
            veth-peer-name d1
            up echo line $IFACE >> {marks}
        iface d1 inet manual
        """))
    config = compile_config(ConfigSource(path=str(path)))
    settings = HookSettings(scripts_dir=str(network),
                            record=str(tmp_path / "run" / "h.json")).with_config(config)
    result = apply(config.model, session, hooks=settings)
    assert result.verified
    assert "UP" in link_details("d0")["flags"] and "UP" in link_details("d1")["flags"]
    assert sorted(marks.read_text().splitlines()) == ["line d0", "script d1"]
