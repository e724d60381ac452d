#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: netcfg developers
# GNU General Public License v2.0 or later (see COPYING or https://www.gnu.org/licenses/gpl-2.0.txt)
"""netcfg_apply: put a netcfg config on trial on one host (the action plugin of
the same name reads `src` on the controller and hands its files here)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: netcfg_apply
short_description: Apply a netcfg config on trial, reverted unless confirmed
version_added: "0.1.0"
description:
  - Copies the templates of O(src) (a directory of C(*.tmpl) with its C(vars.json) and
    C(lib/), or one C(.tmpl) file, read on the controller) to a staging directory next
    to O(dest) on the host, and runs C(netcfg apply --dry-run --json) on it. That plan,
    against the host's running kernel state, is what the module reports.
  - When the plan is not empty, starts C(netcfg apply --confirm) on the staged config,
    detached from the SSH session, and returns once the change is applied and verified.
    netcfgd (or, without it, the waiting C(netcfg) process) reverts the change unless
    M(netcfg.fleet.netcfg_confirm) runs within O(confirm_timeout) seconds. A host whose
    change cut it off never gets that confirmation, so it reverts by itself.
  - When the plan is empty nothing is applied and the result is C(changed=false),
    unless the files differ from O(dest), which are then installed there (the running
    state already matches them).
  - O(dest) is replaced with the staged config only after the confirmation (by
    M(netcfg.fleet.netcfg_confirm)), so a reverted change never reaches it.
author:
  - netcfg developers
options:
  src:
    description:
      - A config directory or a single C(.tmpl) file on the controller.
      - From a directory, its C(*.tmpl), C(vars.json) and C(lib/*) are copied; nothing else.
    type: path
    required: true
  vars:
    description:
      - Template variables; they are merged over the C(vars.json) of O(src) and written
        to the host's C(vars.json), so netcfgd renders the same config after a reload or
        a restart.
    type: dict
    default: {}
  dest:
    description:
      - The config directory on the host, the one netcfgd runs with. It belongs to this
        module; its content is replaced by that of O(src) once confirmed.
    type: path
    default: /etc/netcfg
  confirm_timeout:
    description:
      - Seconds the change waits for M(netcfg.fleet.netcfg_confirm) before it is reverted.
      - It must cover the probes and the confirmation of the whole batch.
    type: float
    default: 120
  files:
    description:
      - Internal, set by the action plugin from O(src); do not set it.
    type: dict
extends_documentation_fragment:
  - netcfg.fleet.netcfg
attributes:
  check_mode:
    support: full
    description: Runs C(netcfg apply --dry-run) and reports its plan; changes nothing.
  diff_mode:
    support: full
    description: The plan, one operation per line (+ add, - delete, ~ set).
notes:
  - Needs netcfg on the host. With netcfgd running, the daemon holds the deadline, so the
    revert happens whatever becomes of the SSH session or the waiting client.
  - While a change waits for its confirmation, netcfgd refuses other applies.
seealso:
  - module: netcfg.fleet.netcfg_confirm
  - module: netcfg.fleet.netcfg_facts
"""

EXAMPLES = r"""
- name: Put the tenant config on trial for 60 s
  netcfg.fleet.netcfg_apply:
    src: files/netcfg/
    vars:
      mgmt_address: "{{ mgmt_address }}"
      tenants: "{{ tenants }}"
    confirm_timeout: 60
  register: netcfg_trial

- name: What would change (no change made)
  netcfg.fleet.netcfg_apply:
    src: files/netcfg/
  check_mode: true
  diff: true
"""

RETURN = r"""
plan:
  description: The plan from C(netcfg apply --dry-run --json), against the host's running state.
  returned: always
  type: dict
  sample: {"batches": [[{"action": "addr-add", "name": "v-t1", "subject": "10.1.1.1/30"}]],
           "operations": 1}
operations:
  description: Number of operations in the plan.
  returned: always
  type: int
batches:
  description: Number of batches in the plan.
  returned: always
  type: int
requests:
  description:
    - Netlink requests the apply sent; C(0) when nothing was applied.
    - For a change on trial the count is known once the trial ends, from
      M(netcfg.fleet.netcfg_confirm); C(null) here.
  returned: always
  type: int
files_changed:
  description: Whether the files differ from those in O(dest).
  returned: always
  type: bool
trial:
  description: The change waiting for M(netcfg.fleet.netcfg_confirm); null when none waits.
  returned: always
  type: dict
  sample: {"pid": 4242, "confirm_timeout": 60.0, "staged": "/etc/netcfg.staged"}
"""

import json
import os
import shutil
import subprocess
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.netcfg.fleet.plugins.module_utils.netcfg_cli import (
    CLIENT_ERR, CLIENT_OUT, COMMON_ARGS, ON_TRIAL_MARK, drop_record, files_differ, load_json,
    netcfg_executable, plan_text, process_alive, promote, read_record, run_dir, run_netcfg,
    staged_path, write_record)

# How long the module waits for `netcfg apply --confirm` to say the change is
# in (compile, apply, verify); a config that takes longer still applies, and
# the module fails saying so (the change then reverts unconfirmed).
APPLY_WAIT_S = 300


def control_character_in(value, path):
    """(where, 'U+XXXX') of the first string in VALUE (lists and dicts
    walked, keys too) with a control character or a Unicode line separator,
    or None. netcfg pastes variables into config lines as they are: a
    newline in one would add lines, a post-up among them run as root (issue
    24, M11). netcfg refuses them too; this says so before anything is staged."""
    if isinstance(value, dict):
        for key, sub in value.items():
            found = (control_character_in(key, "%s (a key)" % path)
                     or control_character_in(sub, "%s[%r]" % (path, key)))
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for index, sub in enumerate(value):
            found = control_character_in(sub, "%s[%d]" % (path, index))
            if found:
                return found
    elif isinstance(value, str):
        for char in value:
            if ord(char) < 0x20 or 0x7f <= ord(char) <= 0x9f or char in u"\u2028\u2029":
                return path, "U+%04X" % ord(char)
    return None


def write_tree(directory, files, variables):
    """The config as netcfg reads it: FILES (relative name -> text) and
    VARIABLES merged over their vars.json."""
    if os.path.lexists(directory):
        shutil.rmtree(directory)
    os.makedirs(directory, 0o755)
    merged = {}
    if "vars.json" in files:
        merged.update(json.loads(files["vars.json"]))
    merged.update(variables)
    texts = dict(files)
    if merged or "vars.json" in files:
        texts["vars.json"] = json.dumps(merged, indent=2, sort_keys=True) + "\n"
    for name, text in texts.items():
        path = os.path.join(directory, name)
        if not os.path.isdir(os.path.dirname(path)):
            os.makedirs(os.path.dirname(path), 0o755)
        with open(path, "w") as f:
            f.write(text)


def discard_stage(module, staged):
    """Remove a stage; check mode's whole temporary directory with it."""
    shutil.rmtree(os.path.dirname(staged) if module.check_mode else staged, ignore_errors=True)


def dry_run(module, netcfg, config):
    rc, out, err = run_netcfg(module, netcfg, "apply", "-c", config, "--dry-run", "--json")
    if rc != 0:
        module.fail_json(msg="netcfg apply --dry-run failed (exit %d): %s" % (rc, err.strip()),
                         rc=rc, stderr=err, stdout=out)
    return load_json(module, out, "netcfg apply --dry-run --json")["plan"]


def start_trial(module, netcfg, staged, dest, timeout):
    """`netcfg apply -c STAGED --confirm TIMEOUT --json`, in its own session
    with its output in files, so it outlives this SSH session. Returns its pid
    once the change is on trial; fails the module if the apply failed."""
    directory = run_dir(module)
    out_path, err_path = os.path.join(directory, CLIENT_OUT), os.path.join(directory, CLIENT_ERR)
    with open(out_path, "w") as out, open(err_path, "w") as err, open(os.devnull) as devnull:
        client = subprocess.Popen(
            [netcfg, "apply", "-c", staged, "--confirm", "%g" % timeout, "--json"],
            stdin=devnull, stdout=out, stderr=err, close_fds=True, start_new_session=True,
            env=dict(os.environ, NETCFG_RUN_DIR=directory), cwd="/")
    write_record(module, {"pid": client.pid, "staged": staged, "dest": dest,
                          "confirm_timeout": timeout, "started": time.time()})
    deadline = time.monotonic() + APPLY_WAIT_S
    while True:
        code = client.poll()
        with open(err_path) as f:
            said = f.read()
        if code is not None:
            drop_record(module)
            module.fail_json(msg="netcfg apply --confirm failed (exit %d): %s"
                             % (code, said.strip()), rc=code, stderr=said)
        if ON_TRIAL_MARK in said:
            return client.pid
        if time.monotonic() > deadline:
            module.fail_json(msg="netcfg apply --confirm did not finish applying within %d s; "
                                 "it is left to revert unconfirmed" % APPLY_WAIT_S)
        time.sleep(0.05)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type="path", required=True),
            vars=dict(type="dict", default={}),
            dest=dict(type="path", default="/etc/netcfg"),
            confirm_timeout=dict(type="float", default=120),
            files=dict(type="dict"),
            **COMMON_ARGS
        ),
        supports_check_mode=True,
    )
    files = module.params["files"]
    if not files:
        module.fail_json(msg="no config files: run netcfg_apply as netcfg.fleet.netcfg_apply "
                             "(its action plugin reads src on the controller)")
    timeout = module.params["confirm_timeout"]
    if not 0 < timeout <= 86400:
        module.fail_json(msg="confirm_timeout must be more than 0 and at most 86400 seconds")
    for name, value in sorted(module.params["vars"].items()):
        bad = control_character_in(value, name)
        if bad:
            module.fail_json(msg="vars: %s contains the control character %s; template "
                                 "variables are pasted into config lines, so they must not "
                                 "contain control characters (a newline would add lines)" % bad)
    netcfg = netcfg_executable(module)
    dest = module.params["dest"].rstrip("/")
    waiting = read_record(module)
    if waiting and process_alive(waiting["pid"]):
        module.fail_json(msg="an apply --confirm (pid %d) of %s still waits for "
                             "netcfg_confirm: confirm it or let it revert first"
                         % (waiting["pid"], waiting["staged"]))
    if module.check_mode:
        # Check mode changes nothing on the host (issue 24, L6: it deleted a
        # leftover trial record): the record stays, and the config is staged
        # in a private temporary directory nothing of netcfg's reads, gone
        # once the dry run has read it.
        staged = os.path.join(tempfile.mkdtemp(prefix="netcfg-check-"), "config")
    else:
        drop_record(module)
        staged = staged_path(dest)
    write_tree(staged, files, module.params["vars"])
    try:
        plan = dry_run(module, netcfg, staged)
    except BaseException:
        discard_stage(module, staged)
        raise
    files_changed = files_differ(staged, dest)
    operations = plan.get("operations", 0)
    result = dict(plan=plan, operations=operations, batches=len(plan.get("batches") or []),
                  requests=0, files_changed=files_changed, trial=None,
                  changed=bool(operations) or files_changed)
    if module._diff:
        result["diff"] = dict(prepared=plan_text(plan) or "(no operations)\n")
    if module.check_mode:
        discard_stage(module, staged)
        module.exit_json(**result)
    if not operations:
        if files_changed:
            # Running state already matches: install the files, and apply them
            # from dest so that netcfgd enforces (and reloads) them from there.
            promote(staged, dest)
            rc, out, err = run_netcfg(module, netcfg, "apply", "-c", dest)
            if rc != 0:
                module.fail_json(msg="netcfg apply -c %s failed (exit %d): %s"
                                 % (dest, rc, err.strip()), rc=rc, stderr=err, stdout=out)
        else:
            shutil.rmtree(staged, ignore_errors=True)
        module.exit_json(**result)
    pid = start_trial(module, netcfg, staged, dest, timeout)
    result.update(requests=None, trial=dict(pid=pid, confirm_timeout=timeout, staged=staged))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
