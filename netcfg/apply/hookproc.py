"""Running one hook command (an imperative line or an if-*.d script) in an
interface's network namespace, with a time limit, without waiting for
children it leaves behind.

The namespace: a child that nsenter(1) moves into the namespace's file
(`nsenter --net=/run/netns/NS`), so this process (netcfgd's threads) never
changes namespace.

Output goes to an anonymous temporary file, not a pipe: a hook that starts a
daemon (`post-up wpa_supplicant -B`, `sleep 30 &`) leaves a child holding
its stdout, and reading a pipe to EOF would hold the apply lock (and
netcfgd) until that child exits; this is the ifupdown2 patch Proxmox carries
("scheduler: avoid waiting for stdout eof"). We wait for the command
itself only; its background children live on, as under ifupdown2.

A command that runs past its time limit is killed with its process group
(it runs in a session of its own), and reported as timed out. It is also
killed when this process dies (pdeathsig_prefix), and runs
with umask 022 (HOOK_UMASK). netcfgd does not call this: its
passes hand commands to a HookWorker (hookworker.py) and never wait.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile

# Hooks get the umask ifupdown2's run under (a shell's), not netcfgd's
# UMask=0077: a `post-up` that writes a file others read keeps working.
HOOK_UMASK = 0o022
TIMED_OUT = -1000      # the exit status said for a command killed at its time limit
NOT_STARTED = 127


def pdeathsig_prefix() -> list[str]:
    """The argv prefix that kills a hook when its starter dies, if setpriv is here."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


def start_hook(argv: list[str], env: dict[str, str], output, *, netns: str,
               netns_dir: str) -> subprocess.Popen:
    """Start one hook command in ``netns`` with its output to the file
    ``output``, in a session of its own (killable as a group), killed with us
    (issue 23 L1: a SIGKILLed apply left its pre-up running beside the next
    apply's), under ifupdown2's umask, not the unit's. OSError if it cannot."""
    if netns:
        argv = ["nsenter", f"--net={os.path.join(netns_dir, netns)}", "--", *argv]
    return subprocess.Popen([*pdeathsig_prefix(), *argv], env=env, stdin=subprocess.DEVNULL,
                            stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
                            umask=HOOK_UMASK)


def kill_group(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def cannot_start(argv: list[str], error: OSError) -> str:
    return f"cannot run {argv[0]}: {error.strerror or error}"


def with_timeout_note(text: str, code: int, timeout_s: float) -> str:
    if code != TIMED_OUT:
        return text
    return f"{text}{'' if not text or text.endswith(chr(10)) else chr(10)}" \
           f"(killed after {timeout_s:g} s)"


def run_hook(argv: list[str], env: dict[str, str], *, netns: str, netns_dir: str,
             timeout_s: float) -> tuple[int, str]:
    """(exit status, output: stdout and stderr together). Negative statuses
    are signals; TIMED_OUT a kill at ``timeout_s``; NOT_STARTED: cannot exec."""
    with tempfile.TemporaryFile() as output:
        try:
            child = start_hook(argv, env, output, netns=netns, netns_dir=netns_dir)
        except OSError as error:
            return NOT_STARTED, cannot_start(argv, error)
        try:
            code = child.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(child)
            child.wait()
            code = TIMED_OUT
        output.seek(0)
        text = output.read().decode(errors="replace")
    return code, with_timeout_note(text, code, timeout_s)


def status_text(code: int) -> str:
    if code == TIMED_OUT:
        return "timed out"
    return f"killed by signal {-code}" if code < 0 else f"exit {code}"
