"""Issue 24, M6/M17: what a `source` line names must be there and be a
regular file; expansion is bounded in files, bytes and time; a config
directory's FIFO *.tmpl or a link to /dev/zero is refused, not read for
ever. Each failed (or hung) on 8f56453."""

from __future__ import annotations

import os
import time

import pytest

from netcfg.compile import sources
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.errors import ConfigInvalid


def interfaces(tmp_path, text: str):
    path = tmp_path / "interfaces"
    path.write_text(text)
    return path


def errors_of(path, **kwargs) -> list[str]:
    with pytest.raises(ConfigInvalid) as info:
        compile_config(ConfigSource(path=str(path), **kwargs))
    return [d.format() for d in info.value.diagnostics]


MAIN = "auto br0\niface br0\n    bridge-ports none\nsource {}\n"
TENANT = "auto br9\niface br9\n    bridge-ports none\n"


def test_a_missing_sourced_file_is_an_error_at_its_line(tmp_path):
    main = interfaces(tmp_path, MAIN.format("tenants.cfg"))
    [error] = errors_of(main)
    assert error.startswith(f"{main}:4: error: cannot read {tmp_path}/tenants.cfg: No such file")


def test_a_dangling_link_is_an_error_naming_its_target(tmp_path):
    os.symlink("gone.cfg", tmp_path / "tenants.cfg")
    main = interfaces(tmp_path, MAIN.format("tenants.cfg"))
    [error] = errors_of(main)
    assert f"{main}:4: error:" in error and "a link to 'gone.cfg', which does not exist" in error


@pytest.mark.parametrize("make, kind", [
    (lambda p: os.mkdir(p), "a directory"),
    (lambda p: os.mkfifo(p), "a FIFO (named pipe)"),
    (lambda p: os.symlink("/dev/zero", p), "a device"),
    (lambda p: os.symlink("/dev/null", p), "a device"),
], ids=["directory", "fifo", "dev-zero", "dev-null"])
def test_a_sourced_non_regular_file_is_refused(tmp_path, make, kind):
    make(tmp_path / "tenants.cfg")
    main = interfaces(tmp_path, MAIN.format("tenants.cfg"))
    started = time.monotonic()
    [error] = errors_of(main)
    assert time.monotonic() - started < 5
    assert error.startswith(f"{main}:4: error: {tmp_path}/tenants.cfg is {kind}, not a regular")


def test_a_glob_matching_nothing_stays_fine_and_a_match_is_read(tmp_path):
    (tmp_path / "interfaces.d").mkdir()
    main = interfaces(tmp_path, MAIN.format("interfaces.d/*"))
    assert ("", "br0") in compile_config(ConfigSource(path=str(main))).model.interfaces
    (tmp_path / "interfaces.d" / "tenant").write_text(TENANT)
    # A directory a glob matches is not a file it names: skipped.
    (tmp_path / "interfaces.d" / "old").mkdir()
    assert ("", "br9") in compile_config(ConfigSource(path=str(main))).model.interfaces


def test_a_fifo_matched_by_a_glob_is_refused(tmp_path):
    (tmp_path / "interfaces.d").mkdir()
    os.mkfifo(tmp_path / "interfaces.d" / "pipe")
    main = interfaces(tmp_path, MAIN.format("interfaces.d/*"))
    [error] = errors_of(main)
    assert "interfaces.d/pipe is a FIFO (named pipe)" in error


@pytest.mark.parametrize("make, kind", [
    (lambda p: os.mkfifo(p), "a FIFO (named pipe)"),
    (lambda p: os.symlink("/dev/zero", p), "a device"),
], ids=["fifo", "dev-zero"])
def test_a_config_directorys_tmpl_that_is_not_a_file_is_refused(tmp_path, make, kind):
    directory = tmp_path / "config"
    directory.mkdir()
    (directory / "a.tmpl").write_text(TENANT)
    make(directory / "b.tmpl")
    [error] = errors_of(directory)
    assert f"{directory}/b.tmpl is {kind}, not a regular file" in error


def fan_out(tmp_path, count: int):
    """COUNT files, each sourcing every later one: 2^COUNT reads through the chains."""
    for i in range(count):
        later = "".join(f"source f{j}\n" for j in range(i + 1, count))
        (tmp_path / f"f{i}").write_text(f"iface x{i}\n    link-type dummy\n{later}")
    return tmp_path / "f0"


def test_source_fan_out_is_bounded_in_files(tmp_path):
    started = time.monotonic()
    errors = errors_of(fan_out(tmp_path, 30))
    assert time.monotonic() - started < 30
    assert any(f"more than {sources.MAX_SOURCED_FILES} files read through 'source'" in e
               for e in errors)
    assert all(":" in e.split(" error: ")[0] for e in errors)   # located


def test_source_fan_out_stops_at_the_render_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "MAX_SOURCED_FILES", 10 ** 9)
    started = time.monotonic()
    errors = errors_of(fan_out(tmp_path, 30), render_timeout=1.0)
    assert time.monotonic() - started < 15
    assert any("took longer than 1 s (--render-timeout)" in e for e in errors)


def test_sourced_bytes_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "MAX_SOURCED_BYTES", 1000)
    (tmp_path / "big.cfg").write_text("# padding\n" * 200)
    main = interfaces(tmp_path, MAIN.format("big.cfg"))
    [error] = errors_of(main)
    assert error.startswith(f"{main}:4: error: {tmp_path}/big.cfg is more than 1000 bytes")
