"""Rendering config templates, and mapping every output line back to the template."""

from __future__ import annotations

import signal
import textwrap

import pytest

from netcfg.compile.render import RenderedSource, Renderer, uses_mako
from netcfg.model.errors import ConfigInvalid
from netcfg.model.location import SourceLocation


def write(path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


def lines_with_locations(source: RenderedSource) -> list[tuple[str, tuple[str, int]]]:
    """(rendered line, (file, line)) for every non-blank rendered line."""
    return [
        (line, tuple(source.location(i)))
        for i, line in enumerate(source.text.split("\n"), 1)
        if line.strip()
    ]


def render_error(renderer: Renderer, path: str):
    with pytest.raises(ConfigInvalid) as info:
        renderer.render_file(path)
    assert len(info.value.diagnostics) == 1
    return info.value.diagnostics[0]


def test_plain_file_is_not_rendered(tmp_path):
    text = "# a comment\nauto lo\niface lo inet loopback\n    mtu 100%\n"
    path = write(tmp_path / "interfaces", text)
    source = Renderer([], {}).render_file(path)
    assert source == RenderedSource(path, text, None)
    assert source.location(3) == SourceLocation(path, 3)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("auto lo\n# one hash is ifupdown2's comment\n", False),
        ("iface x\n    mtu ${mtu}\n", True),
        ("<%namespace file='a.tmpl'/>\n", True),
        ("auto lo\n  % if x:\n", True),
        ("auto lo\n## a Mako comment\n", True),
        ("    address 10.0.0.1/24  # 50% of the time\n", False),
    ],
)
def test_uses_mako(text, expected):
    assert uses_mako(text) is expected


def test_variables_and_for_loop_map_to_template_lines(tmp_path):
    path = write(
        tmp_path / "cfg" / "interfaces.tmpl",
        """\
        # ports
        % for i in range(1, 3):
        auto swp${i}
        iface swp${i}
            mtu ${mtu}
            alias port ${i}
        % endfor
        iface last
        """,
    )
    source = Renderer([], {"mtu": 9000}).render_file(path)
    assert source.name == path
    # Each pass of the loop maps to the same template lines 3-6.
    def port(i: int) -> list:
        return [(f"auto swp{i}", (path, 3)), (f"iface swp{i}", (path, 4)),
                ("    mtu 9000", (path, 5)), (f"    alias port {i}", (path, 6))]

    assert lines_with_locations(source) == [
        ("# ports", (path, 1)), *port(1), *port(2), ("iface last", (path, 8))]


def test_namespace_def_lines_map_to_the_library_file(tmp_path):
    lib = tmp_path / "lib"
    lib_file = write(
        lib / "ports.tmpl",
        """\
        ## Library of port stanzas.
        <%def name="port(n, mtu)">
        iface swp${n}
            mtu ${mtu}
        </%def>
        """,
    )
    path = write(
        tmp_path / "cfg" / "interfaces.tmpl",
        """\
        <%namespace name="p" file="ports.tmpl"/>
        <%namespace name="q" file="/ports.tmpl"/>
        auto swp1
        ${p.port(1, 1500)}
        ${q.port(2, 9000)}
        """,
    )
    source = Renderer([str(lib)], {}).render_file(path)
    assert lines_with_locations(source) == [
        ("auto swp1", (path, 3)),
        ("iface swp1", (lib_file, 3)),
        ("    mtu 1500", (lib_file, 4)),
        ("iface swp2", (lib_file, 3)),
        ("    mtu 9000", (lib_file, 4)),
    ]


def test_indentation_written_by_caller_does_not_hide_the_def(tmp_path):
    lib = tmp_path / "lib"
    lib_file = write(lib / "attrs.tmpl", '<%def name="mtu(v)">mtu ${v}</%def>\n')
    path = write(
        tmp_path / "interfaces.tmpl",
        """\
        <%namespace name="a" file="attrs.tmpl"/>
        iface swp1
            ${a.mtu(9000)}
        """,
    )
    source = Renderer([str(lib)], {}).render_file(path)
    assert lines_with_locations(source) == [
        ("iface swp1", (path, 2)),
        ("    mtu 9000", (lib_file, 1)),
    ]


def test_multi_line_expression_maps_to_its_line(tmp_path):
    path = write(tmp_path / "t.tmpl", "auto lo\n${body}\niface end\n")
    source = Renderer([], {"body": "iface a\n    mtu 1\n"}).render_file(path)
    assert lines_with_locations(source) == [
        ("auto lo", (path, 1)),
        ("iface a", (path, 2)),
        ("    mtu 1", (path, 2)),
        ("iface end", (path, 3)),
    ]


def test_mako_joins_backslash_continuations(tmp_path):
    # In a template, Mako itself consumes a backslash-newline; the joined
    # line keeps the location of its first part.
    path = write(tmp_path / "t.tmpl", "iface br${n}\n    bridge-ports a \\\n  b\n    mtu 1\n")
    source = Renderer([], {"n": 0}).render_file(path)
    assert lines_with_locations(source) == [
        ("iface br0", (path, 1)),
        ("    bridge-ports a   b", (path, 2)),
        ("    mtu 1", (path, 4)),
    ]


def test_render_text_uses_the_given_name(tmp_path):
    lib = tmp_path / "lib"
    write(lib / "x.tmpl", '<%def name="loopback()">lo</%def>\n')
    text = '<%namespace name="x" file="x.tmpl"/>\nauto ${x.loopback()}\n'
    source = Renderer([str(lib)], {}).render_text("<stdin>", text)
    assert source.text == "\nauto lo\n"
    assert source.location(2) == SourceLocation("<stdin>", 2)


def test_last_line_without_newline_and_past_the_end(tmp_path):
    path = write(tmp_path / "t.tmpl", "auto lo\niface ${name}")
    source = Renderer([], {"name": "lo"}).render_file(path)
    assert source.text == "auto lo\niface lo"
    assert source.origins == [SourceLocation(path, 1), SourceLocation(path, 2)]
    assert source.location(7) == SourceLocation(path, 2)


def test_library_reused_across_renders(tmp_path):
    lib = tmp_path / "lib"
    lib_file = write(lib / "p.tmpl", '<%def name="port(n)">iface swp${n}\n</%def>\n')
    renderer = Renderer([str(lib)], {})
    for k in range(2):
        path = write(tmp_path / f"t{k}.tmpl", f'<%namespace name="p" file="p.tmpl"/>\n${{p.port({k})}}')
        source = renderer.render_file(path)
        assert lines_with_locations(source) == [(f"iface swp{k}", (lib_file, 1))]


# A case: the library's p.tmpl (None: there is no library), the template
# t.tmpl, its variables, where the error is reported (file, line) and what it
# says.
@pytest.mark.parametrize("library, template, variables, where, message", [
    pytest.param(
        None,
        """\
        auto lo
        % for v in vlans:
        iface vlan${v}
            vlan-id ${vlanz}
        % endfor
        """,
        {"vlans": [10]}, ("t.tmpl", 4),
        "template error: NameError: name 'vlanz' is not defined\n    vlan-id ${vlanz}",
        id="undefined-variable-named-at-its-use"),
    pytest.param(
        """\
        <%def name="port(n)">
        iface swp${n}
            mtu ${port_mtu}
        </%def>
        """,
        '<%namespace name="p" file="p.tmpl"/>\n${p.port(1)}\n', {}, ("lib/p.tmpl", 3),
        "template error: NameError: name 'port_mtu' is not defined\n    mtu ${port_mtu}",
        id="undefined-variable-in-a-library-def"),
    pytest.param(
        None, "auto lo\n% for v in vlans:\niface vlan${v}\n", {"vlans": []}, ("t.tmpl", 2),
        "template error: SyntaxException: Unterminated control keyword: 'for'\n"
        "    % for v in vlans:",
        id="syntax-error"),
    pytest.param(
        None, "auto lo\niface lo\n    mtu ${1 // zero}\n", {"zero": 0}, ("t.tmpl", 3),
        "template error: ZeroDivisionError: integer division or modulo by zero\n"
        "    mtu ${1 // zero}",
        id="runtime-exception"),
    pytest.param(
        '<%def name="vid(v)">\n% if v > 4094:\n<% raise ValueError("vid %d too big" % v) %>\n'
        "% endif\nvlan-id ${v}\n</%def>\n",
        '<%namespace name="p" file="p.tmpl"/>\niface v\n    ${p.vid(5000)}\n', {}, ("lib/p.tmpl", 3),
        "template error: ValueError: vid 5000 too big\n"
        '    <% raise ValueError("vid %d too big" % v) %>',
        id="runtime-exception-inside-a-library-def"),
])
def test_a_template_error_names_its_line(tmp_path, library, template, variables, where, message):
    lookup = []
    if library is not None:
        write(tmp_path / "lib" / "p.tmpl", library)
        lookup = [str(tmp_path / "lib")]
    path = write(tmp_path / "t.tmpl", template)
    diag = render_error(Renderer(lookup, variables), path)
    assert diag.loc == SourceLocation(str(tmp_path / where[0]), where[1])
    assert diag.message == message


def test_syntax_error_in_library_template(tmp_path):
    lib = tmp_path / "lib"
    lib_file = write(lib / "bad.tmpl", '## x\n<%def name="f()">\n${f(}\n</%def>\n')
    path = write(tmp_path / "t.tmpl", '<%namespace name="b" file="bad.tmpl"/>\n${b.f()}\n')
    diag = render_error(Renderer([str(lib)], {}), path)
    assert diag.loc == SourceLocation(lib_file, 3)
    assert diag.message.startswith("template error: SyntaxException: ")
    assert diag.message.endswith("\n    ${f(}")


def test_missing_library_template_is_located(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    path = write(tmp_path / "t.tmpl", "# header\n<%namespace name='n' file='nope.tmpl'/>\nauto ${n.x()}\n")
    diag = render_error(Renderer([str(lib)], {}), path)
    assert diag.loc == SourceLocation(path, 2)
    assert diag.message == (
        "template error: TemplateLookupException: Can't locate template for uri "
        f"'/nope.tmpl' (searched: {lib})\n    <%namespace name='n' file='nope.tmpl'/>"
    )


def test_unreadable_file(tmp_path):
    path = str(tmp_path / "missing.tmpl")
    diag = render_error(Renderer([], {}), path)
    assert diag.loc == SourceLocation(path, 0)
    assert diag.message == f"cannot read {path}: No such file or directory"


def test_page_args_receive_variables(tmp_path):
    """<%page args="n=1"/> gets vars.json/--set values, not just its default."""
    from netcfg.compile.render import Renderer

    path = tmp_path / "p.tmpl"
    path.write_text('<%page args="n=1, prefix=\'x\'"/>\n'
                    '% for i in range(n):\n'
                    '${prefix}${i}\n'
                    '% endfor\n')
    out = Renderer([], {"n": 3}).render_file(str(path))
    assert out.text.split() == ["x0", "x1", "x2"]


# ---------------------------------------------------------------- what a template may not do

@pytest.mark.parametrize("code, line, kind, says", [
    ("<% raise SystemExit(0) %>", 2, "SystemExit", "sys.exit(0)"),
    ("<%\n    import sys\n    sys.exit()\n%>", 4, "SystemExit", "sys.exit()"),
    ("<% raise GeneratorExit() %>", 2, "GeneratorExit", "BaseException"),
    ("<% raise KeyboardInterrupt() %>", 2, "KeyboardInterrupt", "BaseException"),
    ("${(_ for _ in ()).throw(BaseException('mine'))}", 2, "BaseException", "mine; "),
])
def test_a_template_ending_the_process_is_an_error_at_its_line(tmp_path, code, line, kind, says):
    path = write(tmp_path / "t.tmpl", "auto lo\n" + code + "\nauto eth0\n")
    diag = render_error(Renderer([], {}), path)
    assert diag.loc == SourceLocation(path, line)
    assert diag.message.startswith(f"template error: {kind}: ") and says in diag.message


@pytest.mark.parametrize("body", [
    "% while True:\n% endwhile\n",
    # Catching the first stop does not help: it comes again.
    "<%\nwhile True:\n    try:\n        sum(range(1000))\n    except BaseException:\n"
    "        pass\n%>\n",
])
def test_an_endless_template_is_stopped_at_its_line(tmp_path, body):
    path = write(tmp_path / "t.tmpl", "auto lo\n" + body)
    diag = render_error(Renderer([], {}, timeout=0.2), path)
    assert diag.loc.file == path and diag.loc.line in (2, 3, 4, 5, 6)
    assert "longer than 0.2 s (--render-timeout, $NETCFG_RENDER_TIMEOUT)" in diag.message


def test_a_spent_budget_fails_the_next_file_at_once(tmp_path):
    renderer = Renderer([], {}, timeout=0.2)
    render_error(renderer, write(tmp_path / "t.tmpl", "% while True:\n% endwhile\n"))
    later = write(tmp_path / "u.tmpl", "<% x = 1 %>auto lo\n")
    diag = render_error(renderer, later)
    assert diag.loc == SourceLocation(later, 1) and "longer than 0.2 s" in diag.message


def test_the_limit_leaves_the_signal_handlers_as_it_found_them(tmp_path):
    alarm, interrupt = signal.getsignal(signal.SIGALRM), signal.getsignal(signal.SIGINT)
    Renderer([], {}, timeout=5).render_file(write(tmp_path / "t.tmpl", "<% x = 1 %>auto lo\n"))
    render_error(Renderer([], {}), write(tmp_path / "u.tmpl", "<% raise SystemExit(3) %>\n"))
    assert signal.getsignal(signal.SIGALRM) is alarm
    assert signal.getsignal(signal.SIGINT) is interrupt
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.skipif(signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
                    reason="the test runner handles SIGINT itself")
def test_a_real_ctrl_c_interrupts_even_a_template_that_catches_it(tmp_path):
    """Ctrl-C is the operator's, not the template's error: KeyboardInterrupt
    out of the render (the CLI's exit 130), though the template swallowed it."""
    path = write(tmp_path / "t.tmpl", textwrap.dedent("""\
        <%
            import os, signal
            try:
                os.kill(os.getpid(), signal.SIGINT)
                sum(range(100000))
            except BaseException:
                pass
        %>
        auto lo
        """))
    with pytest.raises(KeyboardInterrupt):
        Renderer([], {}).render_file(path)
