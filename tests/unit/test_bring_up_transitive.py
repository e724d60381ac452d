"""Bring-up follows dependencies through devices that are themselves only
needed (issue 12): validate records what each object needs while resolving
references once, and the bring-up walks those records transitively."""

from __future__ import annotations

from builders import brought_up, compiled


def test_dependencies_of_dependencies_come_up(tmp_path):
    result = compiled(tmp_path, """\
        iface eno1 inet manual
        iface eno2 inet manual
        iface bond0
            bond-slaves eno1 eno2
        iface bond0.10
        auto vmbr0
        iface vmbr0
            bridge-ports bond0.10
        iface eno3 inet manual
        iface vmbr1
            bridge-ports eno3
        """)
    up = brought_up(result)
    assert up == {"vmbr0", "bond0.10", "bond0", "eno1", "eno2"}
    assert result.warnings == []


def test_link_down_stops_the_chain_with_one_warning(tmp_path):
    result = compiled(tmp_path, """\
        iface eno1 inet manual
        iface bond0
            bond-slaves eno1
            link-down yes
        iface bond0.10
        auto vmbr0
        iface vmbr0
            bridge-ports bond0.10
        """)
    up = brought_up(result)
    assert up == {"vmbr0", "bond0.10"}
    assert [w.format().split(": warning: ")[1] for w in result.warnings] == [
        f"bond0: 'link-down yes' keeps it down, and bond0.10 (vlan-raw-device, "
        f"{result.model.iface('', 'bond0.10').where('vlan-raw-device')}) needs it up: "
        f"bond0.10 will carry no traffic through it"]
