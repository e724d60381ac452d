#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: netcfg developers
# GNU General Public License v2.0 or later (see COPYING or https://www.gnu.org/licenses/gpl-2.0.txt)
"""netcfg_confirm: keep (or revert now) the change netcfg_apply put on trial."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: netcfg_confirm
short_description: Keep, or revert now, the netcfg change waiting for confirmation
version_added: "0.1.0"
description:
  - With O(state=confirmed), runs C(netcfg confirm) for the change that
    M(netcfg.fleet.netcfg_apply) put on trial, waits for the apply to report, and
    installs the staged config as the host's config directory (netcfgd then enforces it
    from there).
  - Run it over a new SSH connection, after the probes (C(ansible.builtin.meta) C(reset_connection)
    first). A host that the change cut off cannot be reached, is never confirmed, and
    netcfgd reverts it at the deadline.
  - With O(state=reverted), interrupts the waiting apply, which reverts the change now
    (for a host that can still be reached but failed a probe).
  - When no change waits, does nothing (C(changed=false)).
author:
  - netcfg developers
options:
  state:
    description: Keep the change (V(confirmed)) or revert it now (V(reverted)).
    type: str
    choices: [confirmed, reverted]
    default: confirmed
  wait:
    description: Seconds to wait for the waiting C(netcfg apply) to finish and report.
    type: float
    default: 60
extends_documentation_fragment:
  - netcfg.fleet.netcfg
attributes:
  check_mode:
    support: full
    description: Says whether a change waits; confirms nothing.
  diff_mode:
    support: none
seealso:
  - module: netcfg.fleet.netcfg_apply
"""

EXAMPLES = r"""
- name: Keep the change (a new SSH connection got here)
  netcfg.fleet.netcfg_confirm:
  when: netcfg_trial.trial is not none

- name: A probe failed on a host still reachable - revert it now
  netcfg.fleet.netcfg_confirm:
    state: reverted
"""

RETURN = r"""
outcome:
  description: C(confirmed), C(reverted), or C(none) when nothing waited.
  returned: always
  type: str
summary:
  description: The summary the apply printed when it finished (operations, batches, requests).
  returned: when a change was confirmed
  type: dict
  sample: {"operations": 6, "batches": 3, "requests": 9, "verified": true}
requests:
  description: Netlink requests the confirmed apply sent.
  returned: when a change was confirmed
  type: int
dest:
  description: The config directory the staged config was installed as.
  returned: when a change was confirmed
  type: str
"""

import json
import os
import signal
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.netcfg.fleet.plugins.module_utils.netcfg_cli import (
    CLIENT_ERR, CLIENT_OUT, COMMON_ARGS, EXIT_INVALID_OR_NOT_WAITING, drop_record,
    netcfg_executable, process_alive, promote, read_record, run_dir, run_netcfg, write_record)


def client_output(module):
    texts = []
    for name in (CLIENT_OUT, CLIENT_ERR):
        try:
            with open(os.path.join(run_dir(module), name)) as f:
                texts.append(f.read())
        except (IOError, OSError):
            texts.append("")
    return texts


def wait_exit(module, pid):
    deadline = time.monotonic() + module.params["wait"]
    while process_alive(pid):
        if time.monotonic() > deadline:
            module.fail_json(msg="netcfg apply (pid %d) did not finish within %g s"
                             % (pid, module.params["wait"]))
        time.sleep(0.05)


def reverted(module, record):
    """The trial ended without us: the apply said why on stderr."""
    out, err = client_output(module)
    drop_record(module)
    module.fail_json(msg="the change was reverted before it was confirmed: %s" % err.strip(),
                     outcome="reverted", stderr=err, stdout=out)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["confirmed", "reverted"], default="confirmed"),
            wait=dict(type="float", default=60),
            **COMMON_ARGS
        ),
        supports_check_mode=True,
    )
    record = read_record(module)
    if record is None:
        module.exit_json(changed=False, outcome="none")
    pid = record["pid"]
    if module.check_mode:
        module.exit_json(changed=process_alive(pid) or bool(record.get("confirmed")),
                         outcome="none")
    confirmed = bool(record.get("confirmed"))   # an earlier run confirmed, then failed
    if not confirmed and not process_alive(pid):
        reverted(module, record)

    if module.params["state"] == "reverted":
        if confirmed:
            module.fail_json(msg="the change was confirmed already; apply the config "
                                 "from before to undo it")
        # The waiting client reverts on SIGTERM (through netcfgd: trial-abort).
        os.kill(pid, signal.SIGTERM)
        wait_exit(module, pid)
        drop_record(module)
        out, err = client_output(module)
        module.exit_json(changed=True, outcome="reverted", stderr=err)

    netcfg = netcfg_executable(module)
    if not confirmed:
        rc, out, err = run_netcfg(module, netcfg, "confirm")
        if rc == EXIT_INVALID_OR_NOT_WAITING:
            wait_exit(module, pid)
            reverted(module, record)   # the deadline came first
        if rc != 0:
            module.fail_json(msg="netcfg confirm failed (exit %d): %s" % (rc, err.strip()),
                             rc=rc, stderr=err)
        record["confirmed"] = True
        write_record(module, record)
    wait_exit(module, pid)
    client_out, client_err = client_output(module)
    try:
        summary = json.loads(client_out).get("summary") or {}
    except ValueError:
        module.fail_json(msg="the confirmed netcfg apply did not print its JSON summary",
                         stdout=client_out, stderr=client_err)
    # The change is kept: its config becomes the host's config directory, and
    # an apply from there (no operations: the kernel is already so) makes
    # netcfgd enforce, reload and restart with it from dest, not the stage.
    dest = record["dest"]
    if os.path.isdir(record["staged"]):
        promote(record["staged"], dest)
    rc, out, err = run_netcfg(module, netcfg, "apply", "-c", dest)
    if rc != 0:
        module.fail_json(msg="confirmed, but netcfg apply -c %s failed (exit %d): %s"
                         % (dest, rc, err.strip()), rc=rc, stderr=err, stdout=out)
    drop_record(module)
    module.exit_json(changed=True, outcome="confirmed", summary=summary,
                     requests=summary.get("requests"), dest=dest)


if __name__ == "__main__":
    main()
