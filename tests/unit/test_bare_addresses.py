"""An address written without a prefix (ifupdown-ng's without-netmask fixture):
IPv4 a /32 (ifupdown2's), IPv6 a /128, which is what `ip addr add` makes and
what the kernel reports back, so that verification compares equal."""

from __future__ import annotations

from netcfg.compile.pipeline import ConfigSource, compile_config

TEXT = "auto v6\niface v6\n    address 2001:470:1f10::1\n\nauto v4\niface v4\n    address 203.0.113.2\n"


def test_bare_addresses_get_host_prefixes(tmp_path):
    path = tmp_path / "interfaces"
    path.write_text(TEXT)
    model = compile_config(ConfigSource(path=str(path))).model
    got = {obj.name: obj.attrs["address"] for obj in model.interfaces.values()
           if "address" in obj.attrs}
    assert got == {"v6": ["2001:470:1f10::1/128"], "v4": ["203.0.113.2/32"]}
