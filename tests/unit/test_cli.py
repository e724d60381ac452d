"""The netcfg command line: exit codes, output forms, no tracebacks."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from netcfg.data import templates_dir
from netcfg.cli.main import EXIT_INTERNAL, main

EXAMPLES = templates_dir() / "examples"  # installed ones too


def run(argv, stdin: str | None = None, monkeypatch=None):
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_help_documents_exit_codes():
    proc = subprocess.run([sys.executable, "-m", "netcfg", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "exit codes:" in proc.stdout and "1  the config is invalid" in proc.stdout


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["check", "--no-such-flag"],
                                  ["check", "--set", "not an assignment"]])
def test_usage_errors_exit_2(argv):
    code, _, err = run(argv)
    assert code == 2
    assert "Traceback" not in err


def test_invalid_config_exit_1_with_located_errors(tmp_path):
    (tmp_path / "a.tmpl").write_text("auto eth1\niface eth1\n    mtu 10\n")
    code, _, err = run(["check", "-c", str(tmp_path)])
    assert code == 1
    assert err.splitlines() == [
        f"{tmp_path}/a.tmpl:3: error: eth1: mtu: 10 is less than the minimum of 68",
        "netcfg: 1 error; nothing was changed",
    ]


def test_missing_config_is_an_error_not_a_traceback(tmp_path):
    code, _, err = run(["check", "-c", str(tmp_path / "nope")])
    assert code == 1
    assert "no such file or directory" in err and "Traceback" not in err


def test_empty_config_dir_says_so(tmp_path):
    code, _, err = run(["check", "-c", str(tmp_path)])
    assert code == 1 and "no *.tmpl files" in err


def test_render_of_plain_file_is_identity(tmp_path):
    text = "auto eth0\niface eth0 inet dhcp\n# a comment\n"
    (tmp_path / "interfaces").write_text(text)
    code, out, _ = run(["render", "-c", str(tmp_path / "interfaces")])
    assert code == 0 and out == text


def test_vars_json_and_set(tmp_path):
    (tmp_path / "vars.json").write_text('{"n": 2, "prefix": "dummy"}')
    (tmp_path / "a.tmpl").write_text(
        "% for i in range(n):\nauto ${prefix}${i}\niface ${prefix}${i}\n    link-type dummy\n"
        "% endfor\n")
    code, out, _ = run(["render", "-c", str(tmp_path), "--set", "n=3"])
    assert code == 0
    assert [l for l in out.splitlines() if l.startswith("iface")] == [
        "iface dummy0", "iface dummy1", "iface dummy2"]


def test_bad_vars_json_is_located(tmp_path):
    (tmp_path / "vars.json").write_text('{\n  "n": 2,\n}\n')
    (tmp_path / "a.tmpl").write_text("auto lo\n")
    code, _, err = run(["check", "-c", str(tmp_path)])
    assert code == 1 and err.startswith(f"{tmp_path}/vars.json:3: error: not valid JSON")


def test_check_json_summary():
    code, out, _ = run(["check", "-c", str(EXAMPLES / "tenants.tmpl"), "--json"])
    assert code == 0
    summary = json.loads(out)
    assert summary["ok"] is True and summary["namespaces"] == 3 and summary["targets"] == 3


def test_plan_json_and_dot():
    code, out, _ = run(["plan", "-c", str(EXAMPLES / "tenants.tmpl"), "--json"])
    assert code == 0
    plan = json.loads(out)
    first = plan["batches"][0]
    # Namespaces come first; `lo` needs nothing but bringing up, and may too.
    assert sorted(op["name"] for op in first if op["action"] == "netns-add") == [
        "alpha", "beta", "gamma"]
    assert {op["action"] for op in first} <= {"netns-add", "link-up"}
    code, out, _ = run(["plan", "-c", str(EXAMPLES / "tenants.tmpl"), "--dot"])
    assert code == 0 and out.startswith("digraph")


def test_json_model_from_stdin_compiles_to_the_same_model(monkeypatch):
    from netcfg.compile.pipeline import ConfigSource, compile_config
    from netcfg.compile.jsonform import model_to_json

    stanza_model = compile_config(ConfigSource(path=str(EXAMPLES / "tenants.tmpl"))).model
    doc = json.dumps(model_to_json(stanza_model))
    code, out, err = run(["check", "-c", "-", "--json"], stdin=doc, monkeypatch=monkeypatch)
    assert code == 0, err
    again = compile_config(ConfigSource(path="-", stdin_text=doc)).model
    assert model_to_json(again) == model_to_json(stanza_model)


def test_stanzas_from_stdin(monkeypatch):
    code, _, err = run(["check", "-c", "-"], stdin="auto d0\niface d0\n    link-type dummy\n",
                       monkeypatch=monkeypatch)
    assert code == 0, err


def test_syntax_help():
    code, out, _ = run(["syntax-help", "bridge-vids"])
    assert code == 0
    assert out.startswith("bridge-vids VALUE...") and "bridge" in out
    code, _, err = run(["syntax-help", "bridge-prots"])
    assert code == 2 and "did you mean 'bridge-ports'" in err
    code, out, _ = run(["syntax-help"])
    assert code == 0 and "vxlan-id" in out and "chap-secret-file" in out


def test_internal_error_has_no_traceback_unless_debug(monkeypatch, tmp_path):
    import netcfg.cli.main

    def broken(args):
        raise RuntimeError("boom")

    (tmp_path / "a.tmpl").write_text("auto lo\n")
    monkeypatch.setattr(netcfg.cli.main, "cmd_check", broken)
    code, _, err = run(["check", "-c", str(tmp_path)])
    assert code == EXIT_INTERNAL
    assert "internal error: RuntimeError: boom" in err and "Traceback" not in err
    code, _, err = run(["--debug", "check", "-c", str(tmp_path)])
    assert "Traceback" in err


def test_plan_against_current_state_of_the_same_config_is_empty(tmp_path):
    """`plan --current` diffs against a JSON model: the config against itself
    needs nothing; with one address dropped from current, exactly that comes back."""
    from netcfg.compile.pipeline import ConfigSource, compile_config
    from netcfg.compile.jsonform import model_to_json

    example = str(EXAMPLES / "tenants.tmpl")
    current = model_to_json(compile_config(ConfigSource(path=example)).model)
    (tmp_path / "same.json").write_text(json.dumps(current))
    code, out, err = run(["plan", "-c", example, "--lower", "off",
                          "--current", str(tmp_path / "same.json")])
    assert code == 0, err
    assert out.splitlines()[-1] == "nothing to do"

    eth0 = next(i for i in current["interfaces"]
                if i["name"] == "eth0" and i.get("netns") == "beta")
    eth0["address"] = []
    (tmp_path / "drift.json").write_text(json.dumps(current))
    code, out, err = run(["plan", "-c", example, "--lower", "off", "--json",
                          "--current", str(tmp_path / "drift.json")])
    assert code == 0, err
    ops = [op for batch in json.loads(out)["batches"] for op in batch]
    assert ops == [{"action": "addr-add", "name": "eth0", "netns": "beta",
                    "subject": "10.200.2.2/30"}]


# ---------------------------------------------------------------- kernel commands' arguments
# None of these may reach the kernel: the unit tier runs unsandboxed, maybe as root.

@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    """A private NETCFG_RUN_DIR (apply lock, confirm sockets)."""
    directory = tmp_path / "run"
    monkeypatch.setenv("NETCFG_RUN_DIR", str(directory))
    return directory


@pytest.mark.parametrize("argv", [
    ["apply", "--confirm", "0"], ["apply", "--confirm", "soon"], ["apply", "--confirm", "-5"],
    ["apply", "--confirm", "5", "--dry-run"],
    ["down"], ["down", "--all", "--netns", "t1"], ["down", "--netns"],
    ["confirm", "now"],
])
def test_kernel_command_usage_errors_exit_2(argv, run_dir, tmp_path):
    (tmp_path / "a.tmpl").write_text("auto lo\niface lo inet loopback\n")
    code, _, err = run([*argv, "-c", str(tmp_path)] if argv[0] != "confirm" else argv)
    assert code == 2, err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv", [["apply"], ["apply", "br0", "--netns", "t1"],
                                  ["down", "--all"], ["down", "--netns", "t1"], ["show"],
                                  ["query", "--check"]])
def test_kernel_commands_need_root(argv, run_dir, tmp_path, monkeypatch):
    (tmp_path / "a.tmpl").write_text("auto lo\niface lo inet loopback\n")
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    code, _, err = run([*argv, "-c", str(tmp_path)] if argv[0] != "show" else argv)
    assert code == 2 and "needs root" in err
    assert not run_dir.exists()   # no lock taken either


def test_help_lists_down_and_confirm():
    code, out, _ = run(["apply", "--help"])
    assert code == 0 and "--confirm SECONDS" in out and "IFACE" in out and "--netns NS" in out
    code, out, _ = run(["down", "--help"])
    assert code == 0 and "--all" in out
    code, out, _ = run(["--help"])
    assert "netcfg confirm" in out and "no apply is waiting" in out


def test_confirm_with_nothing_waiting_exits_1(run_dir):
    code, _, err = run(["confirm"])
    assert code == 1 and err == "netcfg: no apply is waiting for confirmation\n"


def test_confirm_reaches_the_waiting_apply(run_dir):
    import threading

    from netcfg.apply.confirm import ConfirmWaiter

    outcome = []
    with ConfirmWaiter() as waiter:
        assert oct((run_dir / f"confirm-{os.getpid()}").stat().st_mode & 0o777) == "0o600"
        assert oct(run_dir.stat().st_mode & 0o777) == "0o700"
        thread = threading.Thread(target=lambda: outcome.append(waiter.wait(10)))
        thread.start()
        code, out, err = run(["confirm"])
        thread.join()
    assert code == 0, err
    assert out == f"confirmed: the apply of pid {os.getpid()} keeps its changes\n"
    assert outcome == [True]
    assert list(run_dir.iterdir()) == []


def test_an_unconfirmed_wait_times_out(run_dir):
    import time

    from netcfg.apply.confirm import ConfirmWaiter

    with ConfirmWaiter() as waiter:
        start = time.monotonic()
        assert waiter.wait(0.2) is False
        assert 0.2 <= time.monotonic() - start < 2
    code, _, _ = run(["confirm"])
    assert code == 1


def test_confirm_removes_a_socket_left_by_a_dead_apply(run_dir):
    import socket

    run_dir.mkdir(mode=0o700)
    stale = run_dir / "confirm-999999"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(stale))   # bound, never listening: what a killed apply leaves
    code, _, err = run(["confirm"])
    assert code == 1 and "no apply is waiting" in err
    assert not stale.exists()


# ---------------------------------------------------------------- templates that misbehave

def test_a_template_exiting_fails_check_with_its_line(tmp_path):
    """SystemExit(0) in a template made `check` exit 0 saying nothing."""
    path = tmp_path / "t.tmpl"
    path.write_text("auto lo\n<% raise SystemExit(0) %>\n")
    code, out, err = run(["check", "-c", str(path)])
    assert code == 1 and out == ""
    assert err.startswith(f"{path}:2: error: template error: SystemExit: ")


def test_an_endless_template_stops_at_the_render_timeout(tmp_path, monkeypatch):
    path = tmp_path / "t.tmpl"
    path.write_text("auto lo\n% while True:\n% endwhile\n")
    code, _, err = run(["check", "--render-timeout", "0.2", "-c", str(path)])
    assert code == 1 and f"{path}:2: error: template error: timeout: " in err
    assert "longer than 0.2 s" in err
    monkeypatch.setenv("NETCFG_RENDER_TIMEOUT", "0.3")
    code, _, err = run(["render", "-c", str(path)])
    assert code == 1 and "longer than 0.3 s" in err


def test_template_path_points_ifupdown2s_lookup_at_a_directory(tmp_path, monkeypatch):
    """A file written for ifupdown2 names its templates as `file="/NAME"`, found in
    template_lookuppath: --template-path (or $NETCFG_TEMPLATE_PATH) says where that is
    when it is not /etc/network/ifupdown2/templates; the first directory holding it wins."""
    first, second = tmp_path / "a", tmp_path / "b"
    for directory, name in ((first, "br_first"), (second, "br_second")):
        directory.mkdir()
        (directory / "bridge_template").write_text(
            f'<%def name="makebr(n)">\nauto {name}${{n}}\niface {name}${{n}}\n'
            "    bridge-ports none\n</%def>\n")
    path = tmp_path / "conf" / "interfaces"
    path.parent.mkdir()
    path.write_text('<%namespace name="bridge" file="/bridge_template"/>\n${bridge.makebr(7)}\n')
    code, out, err = run(["render", "--template-path", f"{tmp_path / 'none'}:{second}:{first}",
                          "-c", str(path)])
    assert code == 0, err
    assert "iface br_second7" in out
    monkeypatch.setenv("NETCFG_TEMPLATE_PATH", str(first))
    code, out, err = run(["render", "-c", str(path)])
    assert code == 0 and "iface br_first7" in out, err
    code, _, err = run(["check", "--template-path", str(tmp_path / "none"), "-c", str(path)])
    assert code == 1 and f"{path}:1: error: template error: " in err
    assert "Can't locate template for uri '/bridge_template'" in err


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf", "nan"])
def test_a_render_timeout_must_be_positive_seconds(tmp_path, value):
    code, _, _ = run(["check", "--render-timeout", value, "-c", str(tmp_path)])
    assert code == 2


def test_ctrl_c_while_starting_is_one_line_and_exit_130(tmp_path):
    """SIGINT in the middle of the CLI's imports (the first ~150 ms): made
    certain here by sending it from an import hook, as netcfg.cli.main imports."""
    path = tmp_path / "t.tmpl"
    path.write_text("auto lo\n")
    script = textwrap.dedent(f"""\
        import os, signal, sys

        class Interrupt:
            def find_spec(self, name, path, target=None):
                if name == "netcfg.cli.kernel_commands":
                    os.kill(os.getpid(), signal.SIGINT)
                return None

        sys.meta_path.insert(0, Interrupt())
        sys.argv = ["netcfg", "check", "-c", {str(path)!r}]
        from netcfg.cli.main import main
        sys.exit(main())
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 130 and done.stderr == "netcfg: interrupted\n", done.stderr
    assert done.stdout == ""


def test_ctrl_c_during_a_render_is_exit_130(tmp_path):
    """After start-up, Python's handler is back: Ctrl-C while a template runs
    is the operator's interrupt (130), not the template's error (1)."""
    path = tmp_path / "t.tmpl"
    path.write_text("<%\n    import os, signal\n    os.kill(os.getpid(), signal.SIGINT)\n%>\n")
    done = subprocess.run([sys.executable, "-m", "netcfg", "check", "-c", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130 and done.stderr == "netcfg: interrupted\n", done.stderr
