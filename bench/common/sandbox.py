#!/usr/bin/env python3
"""Run a command in a fresh private mount + network namespace, never on the host's network.

Benchmarks run peers (ifupdown2, iproute2, ...) that change network state or keep state files
in fixed places. This module gives each run its own namespaces, through

    unshare --mount --net --propagation private -- PYTHON sandbox.py --inner SPEC

and the inner half (this same file) prepares the mount namespace before it runs the command:

* it checks that its network and mount namespaces differ from the caller's, and refuses to run
  anything otherwise;
* for ifupdown2: a tmpfs over /run/network (its lock) and /var/tmp/network (its state), and a
  bind mount over /etc/network/ifupdown2/ifupdown2.conf of a copy whose
  `default_interfaces_configfile` names the given file (so `ifreload`, which has no `-i`, reads
  it too). Where a state directory does not exist on the host, its parent gets an overlay whose
  writable layer is a tmpfs, so nothing is created on the host's disk either;
* it brings `lo` up (the new network namespace has only `lo`, down).

When the command ends, every process in the namespace has ended, and the namespaces and their
mounts go with them. The command is timed inside the sandbox, so the time excludes setting up.

Library use (stdlib only; import from other benches)::

    from sandbox import run_ifupdown2
    seconds, rc, out, err = run_ifupdown2(["ifquery", "-a", "-i", path], path, timeout=120)

Script use::

    bench/common/sandbox.py [--interfaces FILE] [--timeout S] -- COMMAND [ARG...]

prints the command's output and `sandbox: N.NNN s, exit RC` on stderr, and exits with the
command's exit status. Needs root (or CAP_SYS_ADMIN) and util-linux `unshare`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field

IFUPDOWN2_CONF = "/etc/network/ifupdown2/ifupdown2.conf"
IFUPDOWN2_STATE_DIRS = ("/run/network", "/var/tmp/network")
IFUPDOWN2_TOOLS = ("ifup", "ifdown", "ifquery", "ifreload")
# ifupdown2's scripts start with `#!/usr/bin/env python3`; a venv or pyenv python first on PATH
# lacks its dependencies, so peers get a plain system PATH and are started by Debian's python.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SYSTEM_PYTHON = "/usr/bin/python3"

# The inner half reports the command's own time through this file in the work directory.
_RESULT_NAME = "result.json"


class SandboxError(RuntimeError):
    """The sandbox could not be set up; the command did not run."""


@dataclass
class Spec:
    """What the inner half is asked to do; written as JSON into the work directory."""

    argv: list[str]
    host_netns: str  # readlink of /proc/self/ns/net outside, to prove we left it
    host_mntns: str
    tmpfs_dirs: list[str] = field(default_factory=list)
    bind_files: list[tuple[str, str]] = field(default_factory=list)  # (source, target)
    workdir: str = ""
    env: dict[str, str] | None = None
    loopback_up: bool = True


@dataclass
class Result:
    seconds: float  # wall time of the command, measured inside the sandbox
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    cpu_seconds: float | None = None  # user + system time of the command and its children


def run_in_sandbox(argv: list[str], *, timeout: float, tmpfs_dirs: tuple[str, ...] = (),
                   bind_files: tuple[tuple[str, str], ...] = (), env: dict[str, str] | None = None,
                   loopback_up: bool = True) -> Result:
    """Run argv in a fresh mount + network namespace and return its time, status and output.

    tmpfs_dirs get an empty tmpfs each (see the module docstring for missing ones);
    bind_files are (host file, path inside) pairs bound read-only over existing files.
    On timeout the whole sandbox is killed and returncode is -SIGKILL.
    """
    if shutil.which("unshare") is None:
        raise SandboxError("util-linux `unshare` not found")
    with tempfile.TemporaryDirectory(prefix="netcfg-sandbox-") as workdir:
        spec = Spec(argv=list(argv), host_netns=os.readlink("/proc/self/ns/net"),
                    host_mntns=os.readlink("/proc/self/ns/mnt"), tmpfs_dirs=list(tmpfs_dirs),
                    bind_files=[list(pair) for pair in bind_files], workdir=workdir, env=env,
                    loopback_up=loopback_up)
        spec_path = os.path.join(workdir, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(asdict(spec), f)
        outer = ["unshare", "--mount", "--net", "--propagation", "private", "--",
                 sys.executable, os.path.abspath(__file__), "--inner", spec_path]
        start = time.perf_counter()
        proc = subprocess.Popen(outer, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, text=True, errors="replace")
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            return Result(time.perf_counter() - start, -signal.SIGKILL, stdout, stderr, True)
        outer_seconds = time.perf_counter() - start
        result_path = os.path.join(workdir, _RESULT_NAME)
        if not os.path.exists(result_path):
            # The inner half failed before it ran the command (it says why on stderr).
            raise SandboxError(f"sandbox setup failed (exit {proc.returncode}): "
                               f"{stderr.strip()[-2000:]}")
        with open(result_path) as f:
            inner = json.load(f)
        seconds = inner.get("seconds", outer_seconds)
        return Result(seconds, inner["returncode"], stdout, stderr,
                      cpu_seconds=inner.get("cpu_seconds"))


def ifupdown2_conf(interfaces_file: str, template: str = IFUPDOWN2_CONF) -> str:
    """Text of ifupdown2.conf with default_interfaces_configfile set to interfaces_file."""
    lines, found = [], False
    with open(template) as f:
        for line in f:
            if line.split("=", 1)[0].strip() == "default_interfaces_configfile":
                line, found = f"default_interfaces_configfile={interfaces_file}\n", True
            lines.append(line)
    if not found:
        lines.append(f"default_interfaces_configfile={interfaces_file}\n")
    return "".join(lines)


def run_ifupdown2(args: list[str], interfaces_file: str,
                  timeout: float) -> tuple[float, int, str, str]:
    """Run one ifupdown2 tool (args[0]: ifquery, ifup, ifdown, ifreload) in a sandbox.

    interfaces_file becomes ifupdown2's default interfaces file inside the sandbox; pass
    `-i FILE` in args too where the tool takes it. Returns (seconds, returncode, stdout, stderr);
    seconds is the tool's wall time, measured inside the sandbox.
    """
    r = ifupdown2_result(args, interfaces_file, timeout)
    return r.seconds, r.returncode, r.stdout, r.stderr


def ifupdown2_result(args: list[str], interfaces_file: str, timeout: float) -> Result:
    """run_ifupdown2, returning the whole Result (CPU time too)."""
    if not args:
        raise ValueError("args must name an ifupdown2 tool")
    argv = list(args)
    if os.path.basename(argv[0]) in IFUPDOWN2_TOOLS:
        tool = argv[0] if "/" in argv[0] else os.path.join("/usr/sbin", argv[0])
        if not os.path.exists(tool):
            raise SandboxError(f"{tool} not found (apt-get install ifupdown2 python3-mako)")
        argv = [SYSTEM_PYTHON, tool, *argv[1:]]
    # Anything else (a shell, to look around) runs as given, under the same isolation.
    interfaces_file = os.path.abspath(interfaces_file)
    with tempfile.NamedTemporaryFile("w", prefix="ifupdown2-", suffix=".conf",
                                     delete=False) as conf:
        conf.write(ifupdown2_conf(interfaces_file))
    try:
        env = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "HOME": "/root"}
        result = run_in_sandbox(
            argv, timeout=timeout,
            tmpfs_dirs=IFUPDOWN2_STATE_DIRS, bind_files=((conf.name, IFUPDOWN2_CONF),), env=env)
    finally:
        os.unlink(conf.name)
    return result


# ---- inner half: runs as root inside the new namespaces -------------------------------------

def _mount(*args: str) -> None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SandboxError(f"mount {' '.join(args)}: {proc.stderr.strip()}")


def _private_dir(path: str, workdir: str, index: int) -> None:
    """Make `path` an empty, writable, memory-backed directory in this mount namespace only."""
    if os.path.isdir(path):
        _mount("-t", "tmpfs", "-o", "mode=0755", "sandbox", path)
        return
    # Missing on the host: overlay the nearest existing parent, writes going to a tmpfs, and
    # create the directory there. The host's disk never sees it.
    parent = os.path.dirname(path.rstrip("/"))
    while not os.path.isdir(parent):
        parent = os.path.dirname(parent)
    scratch = os.path.join(workdir, f"overlay{index}")
    os.mkdir(scratch)
    _mount("-t", "tmpfs", "-o", "mode=0755", "sandbox", scratch)
    os.mkdir(os.path.join(scratch, "upper"))
    os.mkdir(os.path.join(scratch, "work"))
    try:
        _mount("-t", "overlay", "-o", f"lowerdir={parent},upperdir={scratch}/upper,"
               f"workdir={scratch}/work", "sandbox", parent)
    except SandboxError:
        # No overlayfs: an empty tmpfs over the parent hides its contents inside the sandbox.
        _mount("-t", "tmpfs", "-o", "mode=0755", "sandbox", parent)
    os.makedirs(path, exist_ok=True)


def _inner(spec_path: str) -> int:
    with open(spec_path) as f:
        spec = Spec(**json.load(f))
    if os.readlink("/proc/self/ns/net") == spec.host_netns:
        raise SandboxError("still in the caller's network namespace; refusing to run")
    if os.readlink("/proc/self/ns/mnt") == spec.host_mntns:
        raise SandboxError("still in the caller's mount namespace; refusing to run")
    # unshare --propagation private already did this; repeat it so that no mount below can
    # ever reach the host even if an older unshare did not.
    _mount("--make-rprivate", "/")
    # This network namespace's devices under /sys: ifupdown2 writes bridge and
    # port knobs through sysfs, which would otherwise reach the host's devices.
    _mount("-t", "sysfs", "none", "/sys")
    for index, path in enumerate(spec.tmpfs_dirs):
        _private_dir(path, spec.workdir, index)
    for source, target in spec.bind_files:
        _mount("--bind", source, target)
        _mount("-o", "remount,bind,ro", target)
    if spec.loopback_up:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=False)
    env = spec.env if spec.env is not None else dict(os.environ)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        proc = subprocess.run(spec.argv, env=env)
        returncode = proc.returncode
    except OSError as e:
        print(f"sandbox: cannot run {spec.argv[0]}: {e}", file=sys.stderr)
        returncode = 127
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(os.path.join(spec.workdir, _RESULT_NAME), "w") as f:
        json.dump({"seconds": seconds, "cpu_seconds": cpu, "returncode": returncode}, f)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--inner"]:
        try:
            return _inner(argv[1])
        except SandboxError as e:
            print(f"sandbox: {e}", file=sys.stderr)
            return 125
    parser = argparse.ArgumentParser(
        description="Run a command in a private mount + network namespace. With --interfaces, "
                    "set up ifupdown2's isolation (state dirs on tmpfs, ifupdown2.conf naming "
                    "FILE) and run ifup/ifdown/ifquery/ifreload with Debian's python.")
    parser.add_argument("--interfaces", metavar="FILE",
                        help="interfaces file for ifupdown2 (and its "
                             "default_interfaces_configfile)")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="S")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    try:
        if args.interfaces:
            r = ifupdown2_result(command, args.interfaces, args.timeout)
        else:
            r = run_in_sandbox(command, timeout=args.timeout)
    except SandboxError as e:
        print(f"sandbox: {e}", file=sys.stderr)
        return 125
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    cpu = f", {r.cpu_seconds:.3f} s CPU" if r.cpu_seconds is not None else ""
    print(f"sandbox: {r.seconds:.3f} s wall{cpu}, exit {r.returncode}"
          + (" (timed out)" if r.timed_out else ""), file=sys.stderr)
    return r.returncode if r.returncode >= 0 else 128 - r.returncode


if __name__ == "__main__":
    sys.exit(main())
