"""Issue 24, M10: as root, netcfg refuses config files, vars.json, lib/ and
sourced files that a user other than root owns or could write (or whose
directories above they could), with the fix in the message; a root-owned
sticky parent (/tmp) is fine; another user checks their own files as
before. Each refusal was silently loaded on 8f56453 (uid 65534 added a
post-up that netcfgd ran as root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.errors import ConfigInvalid

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the refusals are root's")
NOBODY = 65534
BRIDGE = "auto br0\niface br0\n    bridge-ports none\n"


@pytest.fixture
def config(tmp_path):
    """tmp_path/site/config/main.tmpl, all root's and 0755/0644 (tmp_path is
    root's 0700 under the sticky /tmp: a trusted chain)."""
    directory = tmp_path / "site" / "config"
    directory.mkdir(parents=True)
    (directory / "main.tmpl").write_text(BRIDGE)
    return directory


def refusal(directory) -> str:
    with pytest.raises(ConfigInvalid) as info:
        compile_config(ConfigSource(path=str(directory)))
    [error] = [d.format() for d in info.value.diagnostics]
    return error


def test_a_trusted_config_compiles(config):
    assert ("", "br0") in compile_config(ConfigSource(path=str(config))).model.interfaces


def test_a_world_writable_parent_is_refused_with_chmod(config):
    os.chmod(config.parent, 0o777)
    assert f"is writable by every user (mode 0777)" in refusal(config)
    assert refusal(config).endswith(f"chmod go-w {config.parent}")


def test_a_config_directory_owned_by_another_user_is_refused_with_chown(config):
    os.chown(config, NOBODY, NOBODY)
    error = refusal(config)
    assert f"{config} is owned by uid {NOBODY}, not root" in error
    assert error.endswith(f"chown root {config}")


def test_a_template_owned_by_another_user_is_refused(config):
    os.chown(config / "main.tmpl", NOBODY, 0)
    assert refusal(config).startswith(f"{config}/main.tmpl:0: error: {config}/main.tmpl is refused")


def test_a_group_writable_file_is_refused_unless_the_group_is_root(config):
    os.chmod(config / "main.tmpl", 0o664)
    compile_config(ConfigSource(path=str(config)))   # group root: fine
    os.chown(config / "main.tmpl", 0, NOBODY)
    assert f"writable by group {NOBODY} (mode 0664)" in refusal(config)


def test_vars_json_others_can_write_is_refused(config):
    (config / "vars.json").write_text("{}\n")
    os.chmod(config / "vars.json", 0o666)
    assert f"chmod go-w {config}/vars.json" in refusal(config)


def test_lib_others_can_write_is_refused(config):
    (config / "lib").mkdir()
    (config / "lib" / "defs.tmpl").write_text("<%def name='x()'>x</%def>\n")
    os.chmod(config / "lib" / "defs.tmpl", 0o666)
    assert f"template directory {config}/lib is refused" in refusal(config)
    os.chmod(config / "lib" / "defs.tmpl", 0o644)
    os.chmod(config / "lib", 0o777)
    assert f"chmod go-w {config}/lib" in refusal(config)


def test_a_sourced_file_in_a_directory_others_can_write_is_refused(tmp_path):
    (tmp_path / "drop").mkdir(mode=0o777)
    os.chmod(tmp_path / "drop", 0o777)
    (tmp_path / "drop" / "tenant").write_text(BRIDGE)
    main = tmp_path / "interfaces"
    main.write_text("source drop/*\n")
    error = refusal(main)
    assert error.startswith(f"{main}:1: error: {tmp_path}/drop/tenant is refused")
    assert f"chmod go-w {tmp_path}/drop" in error


def test_a_root_owned_sticky_parent_is_fine(config):
    os.chmod(config.parent, 0o1777)
    assert ("", "br0") in compile_config(ConfigSource(path=str(config))).model.interfaces


def _others_can_read(path: str) -> bool:
    """Whether a user other than root can reach ``path`` (every directory up
    to it searchable by others)."""
    path = os.path.abspath(path)
    while True:
        if not os.stat(path).st_mode & 0o001:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def test_another_user_checks_their_own_files_as_before():
    """As uid 65534, a config of its own in a directory it owns (mode 0777):
    nothing runs as root, so nothing is refused."""
    import netcfg

    if not _others_can_read(os.path.dirname(netcfg.__file__)):
        pytest.skip("the netcfg under test is in a directory other users cannot read "
                    "(autopkgtest's private tmp dir)")
    top = tempfile.mkdtemp(prefix="netcfg-trust-")
    try:
        os.chmod(top, 0o755)
        directory = os.path.join(top, "mine")
        os.mkdir(directory, 0o777)
        os.chmod(directory, 0o777)
        with open(os.path.join(directory, "main.tmpl"), "w") as f:
            f.write(BRIDGE)
        os.chown(directory, NOBODY, NOBODY)
        os.chown(os.path.join(directory, "main.tmpl"), NOBODY, NOBODY)
        # Imported first, the kinds (loaded on first use) too: the interpreter's own
        # files may be root's only (pyenv under /root here; wireguard imports base64).
        code = ("import os; from netcfg.compile.pipeline import ConfigSource, compile_config;"
                "import netcfg.kinds.registry; netcfg.kinds.registry.kinds();"
                "os.setgroups([]); os.setgid(65534); os.setuid(65534);"
                f"m = compile_config(ConfigSource(path={directory!r})).model;"
                "print(sorted(m.interfaces))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              cwd="/", timeout=60)
        assert done.returncode == 0, done.stderr
        assert "('', 'br0')" in done.stdout
    finally:
        shutil.rmtree(top)
