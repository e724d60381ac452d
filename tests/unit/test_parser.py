"""Parsing interfaces(5) text in ifupdown2's dialect into located stanzas."""

from __future__ import annotations

import glob
import os
import textwrap

import pytest

from netcfg.compile.parser import expand_names, parse
from netcfg.compile.render import RenderedSource, Renderer
from netcfg.compile.syntax import ParsedConfig, RawAttribute, Stanza
from netcfg.model.errors import ConfigInvalid, Diagnostic, Report
from netcfg.model.location import SourceLocation

F = "interfaces"


def at(line: int, file: str = F) -> SourceLocation:
    return SourceLocation(file, line)


def stanza(keyword: str, name: str, line: int, *attributes: tuple[str, str, int],
           family: str | None = None, method: str | None = None) -> Stanza:
    """A Stanza of F at ``line``; ``attributes``: (name, value, line) in order."""
    return Stanza(keyword, name, at(line), family, method,
                  [RawAttribute(a, value, at(n)) for a, value, n in attributes])


def no_load(pattern, loc):
    raise AssertionError(f"unexpected source of {pattern}")


def parse_text(text: str, load=no_load) -> tuple[ParsedConfig, list[str]]:
    report = Report()
    config = parse([RenderedSource(F, textwrap.dedent(text), None)], load, report)
    return config, [d.format() for d in report.diagnostics]


def parse_ok(text: str, load=no_load) -> ParsedConfig:
    config, errors = parse_text(text, load)
    assert errors == []
    return config


def file_loader(renderer: Renderer):
    """The loader compile_config uses: render each file the glob matches, sorted."""

    def load(pattern, loc):
        return [renderer.render_file(f) for f in sorted(glob.glob(pattern)) if os.path.isfile(f)]

    return load


# --- names ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text, names",
    [
        ("swp1 swp2", ["swp1", "swp2"]),
        ("  swp1\tswp2  ", ["swp1", "swp2"]),
        ("swp[1-4]", ["swp1", "swp2", "swp3", "swp4"]),
        ("swp[1-3].100 bond0", ["swp1.100", "swp2.100", "swp3.100", "bond0"]),
        ("s[1-2]p[0-1]", ["s1p0", "s1p1", "s2p0", "s2p1"]),
        ("swp[7-7]", ["swp7"]),
        ("glob swp1-3.100 eth0", ["swp1.100", "swp2.100", "swp3.100", "eth0"]),
        ("glob eth0.1-2", ["eth0.1", "eth0.2"]),
        ("glob swp[1-2]", ["swp1", "swp2"]),
        ("", []),
    ],
)
def test_expand_names(text, names):
    assert expand_names(text) == names


@pytest.mark.parametrize(
    "text, message",
    [
        ("swp[4-1]", "bad range in 'swp[4-1]': 4 is greater than 1"),
        ("swp[a-b]", "bad range in 'swp[a-b]': expected NAME[FIRST-LAST], like swp[1-4]"),
        ("swp[1-4", "bad range in 'swp[1-4': expected NAME[FIRST-LAST], like swp[1-4]"),
        ("swp[0-70000]", "range 'swp[0-70000]' gives more than 65536 names"),
        ("a[0-999]b[0-999]", "range 'a[0-999]b[0-999]' gives more than 65536 names"),
        ("glob swp", "bad glob 'swp': expected PREFIX FIRST-LAST SUFFIX, like swp1-4.100"),
        ("swp1 glob", "'glob' must be followed by a pattern like swp1-4.100"),
    ],
)
def test_expand_names_errors(text, message):
    with pytest.raises(ValueError) as info:
        expand_names(text)
    assert str(info.value) == message


# --- stanzas and attributes ----------------------------------------------


def test_iface_stanzas_and_attributes():
    config = parse_ok(
        """\
        # loopback
        auto lo
        iface lo inet loopback

        iface br0 inet static
            bridge_ports   swp1\tswp2
            address 10.0.0.1/24
        mtu 9000
        iface swp1
        iface eth0 inet6
        """
    )
    assert config.stanzas == [
        stanza("iface", "lo", 3, family="inet", method="loopback"),
        stanza("iface", "br0", 5, ("bridge-ports", "swp1 swp2", 6), ("address", "10.0.0.1/24", 7),
               ("mtu", "9000", 8), family="inet", method="static"),
        stanza("iface", "swp1", 9),
        stanza("iface", "eth0", 10, family="inet6"),
    ]
    assert config.auto == {"lo": at(2)}


def test_auto_and_allow_lines():
    config = parse_ok(
        """\
        auto lo swp[1-2]
        allow-auto eth0
        allow-hotplug eth1 eth2
        allow-boot eth3
        auto glob br1-2
        auto lo
        """
    )
    assert config.auto == {
        "lo": at(1),
        "swp1": at(1),
        "swp2": at(1),
        "eth0": at(2),
        "eth1": at(3),
        "eth2": at(3),
        "br1": at(5),
        "br2": at(5),
    }
    assert config.allow == {
        "eth1": [("hotplug", at(3))],
        "eth2": [("hotplug", at(3))],
        "eth3": [("boot", at(4))],
    }
    assert config.stanzas == []


def test_iface_range_gives_one_stanza_per_name():
    config = parse_ok(
        """\
        iface swp[1-3].100
            mtu 1500
        """
    )
    assert [(s.name, s.loc, s.attributes) for s in config.stanzas] == [
        (f"swp{n}.100", at(1), [RawAttribute("mtu", "1500", at(2))]) for n in (1, 2, 3)
    ]
    first, second, _ = config.stanzas
    assert first.attributes is not second.attributes
    assert first.attributes[0] is not second.attributes[0]


def test_iface_glob_name():
    config = parse_ok("iface glob swp1-2 inet manual\n")
    assert config.stanzas == [
        stanza("iface", "swp1", 1, family="inet", method="manual"),
        stanza("iface", "swp2", 1, family="inet", method="manual"),
    ]


def test_netcfg_stanzas_and_netns_column():
    config = parse_ok(
        """\
        netns red
            nsid 5
        iface swp1
            netns red
            mtu 9000
        volume disk0
            backing /var/lib/disk0.img
        target iqn.2024-01.org.example:disk0
            netns red
            lun 0 disk0
        """
    )
    assert config.stanzas == [
        stanza("netns", "red", 1, ("nsid", "5", 2)),
        stanza("iface", "swp1", 3, ("netns", "red", 4), ("mtu", "9000", 5)),
        stanza("volume", "disk0", 6, ("backing", "/var/lib/disk0.img", 7)),
        stanza("target", "iqn.2024-01.org.example:disk0", 8, ("netns", "red", 9),
               ("lun", "0 disk0", 10)),
    ]


def test_keywords_start_a_stanza_even_when_indented():
    config = parse_ok(
        """\
        iface a
            mtu 1
            iface b
            mtu 2
        """
    )
    assert [(s.name, [a.value for a in s.attributes]) for s in config.stanzas] == [
        ("a", ["1"]),
        ("b", ["2"]),
    ]


def test_continuation_lines_join_with_one_space():
    config = parse_ok(
        "iface br0\n"
        "    bridge-ports swp1 \\\n"
        "        swp2\\\n"
        "        swp3\n"
        "    mtu 9000\n"
    )
    assert config.stanzas[0].attributes == [
        RawAttribute("bridge-ports", "swp1 swp2 swp3", at(2)),
        RawAttribute("mtu", "9000", at(5)),
    ]


def test_attribute_without_value():
    config = parse_ok("iface br0\n    bridge-vlan-aware\n")
    assert config.stanzas[0].attributes == [RawAttribute("bridge-vlan-aware", "", at(2))]


def test_locations_come_from_the_template(tmp_path):
    rendered = RenderedSource(
        "out",
        "iface a\n    mtu 1\n",
        [SourceLocation("main.tmpl", 7), SourceLocation("lib/p.tmpl", 3)],
    )
    config = parse([rendered], no_load, Report())
    assert config.stanzas == [
        Stanza("iface", "a", at(7, "main.tmpl"), attributes=[RawAttribute("mtu", "1", at(3, "lib/p.tmpl"))])
    ]


# --- pragmas -------------------------------------------------------------


def test_lower_pragma_records_the_template_file():
    rendered = RenderedSource(
        "out",
        "# netcfg: lower=off\n#netcfg:lower = off\nauto lo\n",
        [at(4, "a.tmpl"), at(1, "lib/b.tmpl"), at(5, "a.tmpl")],
    )
    report = Report()
    config = parse([rendered], no_load, report)
    assert config.lower_off_files == {"a.tmpl", "lib/b.tmpl"}
    assert report.diagnostics == []


def test_lower_auto_pragma_and_unknown_pragma():
    config, errors = parse_text(
        """\
        # netcfg: lower=off
        # netcfg: lower=auto
        # netcfg: lower=sometimes
        # not a pragma: netcfg
        """
    )
    assert config.lower_off_files == set()
    assert errors == [
        "interfaces:3: error: unknown netcfg pragma 'lower=sometimes': "
        "expected 'lower=off' or 'lower=auto'"
    ]


# --- errors --------------------------------------------------------------


def test_family_and_method_errors():
    config, errors = parse_text(
        """\
        iface eth0 ipx static
            mtu 1
        iface eth1 inet bootp
            mtu 2
        iface eth2 inet statik
        iface eth3 inet static extra
        iface
        """
    )
    assert config.stanzas == []
    assert errors == [
        "interfaces:1: error: unsupported address family 'ipx' (supported: inet, inet6)",
        "interfaces:3: error: unsupported method 'bootp' (supported: dhcp, loopback, manual, "
        "static)",
        "interfaces:5: error: unsupported method 'statik' (supported: dhcp, loopback, manual, static)"
        " (did you mean 'static'?)",
        "interfaces:6: error: unexpected 'extra' after 'iface eth3 inet static': "
        "expected iface NAME [inet|inet6 METHOD]",
        "interfaces:7: error: 'iface' needs an interface name: iface NAME [inet|inet6 METHOD]",
    ]


def test_attribute_outside_of_a_stanza():
    config, errors = parse_text(
        """\
        address 10.0.0.1/24
        auto lo
            mtu 9000
        iface lo
            mtu 100
        """
    )
    assert errors == [
        "interfaces:1: error: attribute 'address' outside of a stanza: put it after an "
        "'iface NAME' line (or another stanza keyword)",
        "interfaces:3: error: attribute 'mtu' outside of a stanza: put it after an "
        "'iface NAME' line (or another stanza keyword)",
    ]
    assert config.stanzas == [stanza("iface", "lo", 4, ("mtu", "100", 5))]


def test_a_mapping_stanza_keeps_its_lines_apart_from_the_interfaces():
    """compile/runtime_choice.py runs it; the parser only collects it."""
    config, errors = parse_text(
        """\
        mapping eth0 eth1
            script /usr/local/sbin/map-scheme
            map HOME eth0-home
        iface eth0 inet dhcp
        """
    )
    assert errors == []
    assert config.stanzas == [stanza("iface", "eth0", 4, family="inet", method="dhcp")]
    assert config.mappings == [stanza("mapping", "eth0 eth1", 1,
                                      ("script", "/usr/local/sbin/map-scheme", 2),
                                      ("map", "HOME eth0-home", 3))]


def test_name_errors_are_located():
    config, errors = parse_text(
        """\
        auto swp[3-1]
        iface swp[1-x]
            mtu 1
        netns
        volume a b
        allow- eth0
        auto
        """
    )
    assert config.stanzas == [] and config.auto == {}
    assert errors == [
        "interfaces:1: error: auto: bad range in 'swp[3-1]': 3 is greater than 1",
        "interfaces:2: error: iface: bad range in 'swp[1-x]': expected NAME[FIRST-LAST], like swp[1-4]",
        "interfaces:4: error: 'netns' needs a name: expected 'netns NAME'",
        "interfaces:5: error: 'volume' takes one name, got 'a b': expected 'volume NAME'",
        "interfaces:6: error: 'allow-' needs a class, as in 'allow-hotplug NAME'",
        "interfaces:7: error: 'auto' needs at least one interface name",
    ]


# --- includes ------------------------------------------------------------


def write(path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_source_is_relative_to_the_including_file_and_inline(tmp_path):
    main = write(tmp_path / "interfaces", "auto lo\nsource interfaces.d/*.cfg\niface last\n")
    b = write(tmp_path / "interfaces.d" / "b.cfg", "iface b\n    mtu 2\n")
    a = write(tmp_path / "interfaces.d" / "a.cfg", "iface a\n")
    write(tmp_path / "interfaces.d" / "skip.txt", "iface skipped\n")
    renderer = Renderer([], {})
    report = Report()
    config = parse([renderer.render_file(main)], file_loader(renderer), report)
    assert report.diagnostics == []
    assert [(s.name, s.loc) for s in config.stanzas] == [
        ("a", at(1, a)),
        ("b", at(1, b)),
        ("last", at(3, main)),
    ]
    assert config.stanzas[1].attributes == [RawAttribute("mtu", "2", at(2, b))]


def test_source_passes_the_pattern_and_location_to_the_loader():
    calls = []

    def load(pattern, loc):
        calls.append((pattern, loc))
        return [RenderedSource("/etc/net/more", "iface more\n", None)]

    config = parse_ok("source /etc/net/more\n", load)
    assert calls == [("/etc/net/more", at(1))]
    assert config.stanzas == [Stanza("iface", "more", at(1, "/etc/net/more"))]


def test_source_directory_reads_only_run_parts_names(tmp_path):
    main = write(tmp_path / "interfaces", "source-directory conf.d\n")
    one = write(tmp_path / "conf.d" / "10-uplink", "iface uplink\n")
    two = write(tmp_path / "conf.d" / "20_br", "iface br\n")
    write(tmp_path / "conf.d" / "20_br.bak", "iface bak\n")
    write(tmp_path / "conf.d" / "x.cfg", "iface cfg\n")
    write(tmp_path / "conf.d" / "sub" / "y", "iface sub\n")
    renderer = Renderer([], {})
    report = Report()
    config = parse([renderer.render_file(main)], file_loader(renderer), report)
    assert report.diagnostics == []
    assert [(s.name, s.loc) for s in config.stanzas] == [("uplink", at(1, one)), ("br", at(1, two))]


def test_source_directory_missing(tmp_path):
    main = write(tmp_path / "interfaces", "\nsource-directory nope\n")
    report = Report()
    parse([Renderer([], {}).render_file(main)], file_loader(Renderer([], {})), report)
    assert [d.format() for d in report.diagnostics] == [
        f"{main}:2: error: source-directory {tmp_path}/nope: No such file or directory"
    ]


def test_source_loop_is_an_error(tmp_path):
    main = write(tmp_path / "interfaces", "iface a\nsource other\n")
    other = write(tmp_path / "other", "iface b\nsource interfaces\n")
    renderer = Renderer([], {})
    report = Report()
    config = parse([renderer.render_file(main)], file_loader(renderer), report)
    assert [s.name for s in config.stanzas] == ["a", "b"]
    assert [d.format() for d in report.diagnostics] == [
        f"{other}:2: error: source loop: {main} -> {other} -> {main}"
    ]


def test_file_sourcing_itself(tmp_path):
    main = write(tmp_path / "interfaces", "source *\n")
    renderer = Renderer([], {})
    report = Report()
    parse([renderer.render_file(main)], file_loader(renderer), report)
    assert [d.format() for d in report.diagnostics] == [
        f"{main}:1: error: source loop: {main} -> {main}"
    ]


def test_loader_errors_are_kept_and_parsing_goes_on():
    def load(pattern, loc):
        raise ConfigInvalid([Diagnostic(SourceLocation("bad.tmpl", 3), "template error: boom")])

    config, errors = parse_text("source bad.tmpl\niface after\n", load)
    assert errors == ["bad.tmpl:3: error: template error: boom"]
    assert config.stanzas == [stanza("iface", "after", 2)]


def test_rendered_include_keeps_template_locations(tmp_path):
    main = write(tmp_path / "interfaces", "source ports.tmpl\n")
    tmpl = write(
        tmp_path / "ports.tmpl",
        """\
        % for i in range(2):
        iface swp${i}
            mtu ${mtu}
        % endfor
        """,
    )
    renderer = Renderer([], {"mtu": 1500})
    report = Report()
    config = parse([renderer.render_file(main)], file_loader(renderer), report)
    assert report.diagnostics == []
    assert config.stanzas == [
        Stanza("iface", f"swp{i}", at(2, tmpl), attributes=[RawAttribute("mtu", "1500", at(3, tmpl))])
        for i in range(2)
    ]


def test_ifupdown_patterns_on_auto_lines_are_kept_apart_the_names_kept():
    """ifupdown 0.8's `auto /eth*` is matched when netcfg compiles
    (compile/runtime_choice.py); plain names on the line count as before."""
    config, errors = parse_text(
        """\
        auto eth0 /eth* mac/01:23:45:67:89:ad/=foo
        iface eth0 inet dhcp
        """
    )
    assert errors == []
    assert list(config.auto) == ["eth0"]
    assert [(k, w, loc.line) for k, w, loc in config.patterns] == [
        ("auto", "/eth*", 1), ("auto", "mac/01:23:45:67:89:ad/=foo", 1)]


def test_inherits_on_the_iface_line_is_a_line_of_the_stanza():
    config, errors = parse_text(
        """\
        iface eth1 inet static inherits eth0
        iface eth2 inherits eth0
        """
    )
    assert errors == []
    assert [(s.name, s.family, s.method, [(a.name, a.value) for a in s.attributes])
            for s in config.stanzas] == [
        ("eth1", "inet", "static", [("inherits", "eth0")]),
        ("eth2", None, None, [("inherits", "eth0")])]


def test_no_scripts_names_interfaces_and_opens_no_stanza():
    config, errors = parse_text(
        """\
        no-scripts eth0 eth[1-2]
        iface eth0 inet manual
        """
    )
    assert errors == []
    assert list(config.no_scripts) == ["eth0", "eth1", "eth2"]
    assert [s.name for s in config.stanzas] == ["eth0"]
