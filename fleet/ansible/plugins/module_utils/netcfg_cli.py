# -*- coding: utf-8 -*-
# Copyright: netcfg developers
# GNU General Public License v2.0 or later (see COPYING or https://www.gnu.org/licenses/gpl-2.0.txt)
"""What the netcfg.fleet modules share: running the `netcfg` command line on
the managed host, and the small record of an `apply --confirm` that waits.

The modules speak to netcfg only through its command line (`netcfg apply
--dry-run --json`, `netcfg apply --confirm`, `netcfg confirm`, `netcfg status
--json`), never by importing it: the CLI and its exit codes are netcfg's
stable interface, its Python modules are not.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import sys

# The record of the trial the fleet started: which client waits for `netcfg
# confirm`, where its output goes, and which staged config it applied. In
# netcfg's run dir (root only, tmpfs: a reboot forgets it, as netcfgd does).
TRIAL_RECORD = "fleet-trial.json"
CLIENT_OUT = "fleet-apply.out"
CLIENT_ERR = "fleet-apply.err"
# What `netcfg apply --confirm` prints (stderr) once the change is in and
# verified, with or without netcfgd: the change is now on trial.
ON_TRIAL_MARK = "run 'netcfg confirm' within"

# The options every module takes to find netcfg on the host, documented once
# in doc_fragments/netcfg.py.
COMMON_ARGS = dict(executable=dict(type="path"), run_dir=dict(type="path"))

EXIT_OK = 0
EXIT_INVALID_OR_NOT_WAITING = 1
EXIT_REVERTED = 3


def netcfg_executable(module):
    """The `netcfg` to run: the `executable` option, else PATH, else the one
    next to the Python running this module (a venv install)."""
    path = module.params.get("executable")
    if path:
        return path
    found = module.get_bin_path("netcfg")
    if found:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), "netcfg")
    if os.access(beside, os.X_OK):
        return beside
    module.fail_json(msg="netcfg is not installed on this host (no `netcfg` on PATH); "
                         "set the module's `executable` option to its path")


def run_dir(module):
    """netcfg's run dir: the option, else $NETCFG_RUN_DIR, else /run/netcfg."""
    return module.params.get("run_dir") or os.environ.get("NETCFG_RUN_DIR") or "/run/netcfg"


def run_netcfg(module, netcfg, *args):
    """(rc, stdout, stderr) of `netcfg ARGS`, with NETCFG_RUN_DIR passed on."""
    env = {"NETCFG_RUN_DIR": run_dir(module)}
    return module.run_command([netcfg] + list(args), environ_update=env)


def load_json(module, text, what):
    try:
        return json.loads(text)
    except ValueError:
        module.fail_json(msg="%s did not print JSON" % what, stdout=text)


def read_record(module):
    """The trial record, or None when the fleet started none."""
    path = os.path.join(run_dir(module), TRIAL_RECORD)
    try:
        with open(path) as f:
            return json.load(f)
    except (IOError, OSError, ValueError):
        return None


def write_record(module, record):
    directory = run_dir(module)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    path = os.path.join(directory, TRIAL_RECORD)
    with open(path + ".new", "w") as f:
        json.dump(record, f)
    os.rename(path + ".new", path)


def drop_record(module):
    try:
        os.unlink(os.path.join(run_dir(module), TRIAL_RECORD))
    except OSError:
        pass


def process_alive(pid):
    """True while PID runs (a zombie is not running: it waits to be reaped)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (IOError, OSError, IndexError):
        return False
    return state != "Z"


def staged_path(dest):
    """Where a new config waits for its confirmation, next to dest: same
    filesystem, so promoting it is a rename."""
    return dest.rstrip("/") + ".staged"


# What netcfg reads of a config directory (netcfg/compile/pipeline.py): its
# top-level *.tmpl files, vars.json and the templates under lib/. These are
# the config's, so a rollout replaces them and removes those it no longer
# ships. Everything else in dest (a WireGuard key such as /etc/netcfg/wg0.key,
# CHAP secrets, or if-up.d and friends when dest is /etc/network) is the
# operator's: kept as it is unless the rollout ships a file of that name.
CONFIG_SUFFIX = ".tmpl"
CONFIG_VARS = "vars.json"
CONFIG_LIB = "lib"


def config_owned(relative):
    """Whether RELATIVE (a path inside a config directory) is one netcfg
    reads as config, and so one a rollout may remove."""
    parts = relative.split(os.sep)
    if len(parts) == 1:
        return relative.endswith(CONFIG_SUFFIX) or relative == CONFIG_VARS
    return parts[0] == CONFIG_LIB


def tree_files(directory):
    """Relative names of the files (and links) under DIRECTORY."""
    found = set()
    for root, dirs, names in os.walk(directory):
        for name in names + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            found.add(os.path.relpath(os.path.join(root, name), directory))
    return found


def promote(staged, dest):
    """Make the staged config the one at dest, file by file (each a rename, so
    netcfgd never reads half a file; dest may be a mount point, so it is not
    renamed itself), and drop the stage. The config's files dest had that the
    stage does not ship go (config_owned); every other file of dest stays
    (issue 24, M13: the WireGuard key the docs put in /etc/netcfg was
    deleted at the first rollout). The files dest had are kept in
    DEST.previous for the operator; netcfg does not read them."""
    previous = dest.rstrip("/") + ".previous"
    if os.path.lexists(previous):
        shutil.rmtree(previous)
    if os.path.isdir(dest):
        shutil.copytree(dest, previous, symlinks=True)
    else:
        os.makedirs(dest, 0o755)
    wanted = tree_files(staged)
    for relative in sorted(wanted):
        target = os.path.join(dest, relative)
        if not os.path.isdir(os.path.dirname(target)):
            os.makedirs(os.path.dirname(target), 0o755)
        shutil.copy2(os.path.join(staged, relative), target + ".new")
        os.rename(target + ".new", target)
    for relative in sorted(tree_files(dest) - wanted):
        if config_owned(relative):
            os.unlink(os.path.join(dest, relative))
    shutil.rmtree(staged)


def files_differ(staged, dest):
    """Whether promoting STAGED would change DEST: a shipped file is new or
    different, or a config file of dest would go."""
    shipped = tree_files(staged)
    for relative in shipped:
        if read_file(os.path.join(staged, relative)) != read_file(os.path.join(dest, relative)):
            return True
    return any(config_owned(r) for r in tree_files(dest) - shipped) if os.path.isdir(dest) \
        else bool(shipped)


def read_file(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except (IOError, OSError):
        return None


def plan_text(plan):
    """The plan as lines of a diff: + for what is added, - for what is
    deleted, ~ for what is set on an existing object."""
    lines = []
    for number, batch in enumerate(plan.get("batches") or [], start=1):
        lines.append("@@ batch %d (%d operations) @@" % (number, len(batch)))
        for op in batch:
            action = op.get("action", "?")
            sign = "+" if action.endswith("-add") else "-" if action.endswith("-del") else "~"
            words = [action, op.get("name", "")]
            if op.get("subject"):
                words.append(str(op["subject"]))
            for key, value in sorted((op.get("params") or {}).items()):
                words.append("%s=%s" % (key, value))
            if op.get("netns"):
                words.append("(netns %s)" % op["netns"])
            lines.append("%s %s" % (sign, " ".join(w for w in words if w)))
    return "\n".join(lines) + ("\n" if lines else "")
