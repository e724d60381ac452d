#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: netcfg developers
# GNU General Public License v2.0 or later (see COPYING or https://www.gnu.org/licenses/gpl-2.0.txt)
"""netcfg_facts: netcfgd's status as facts, and whether it is clean."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: netcfg_facts
short_description: netcfgd's status (C(netcfg status --json)) as facts
version_added: "0.1.0"
description:
  - Runs C(netcfg status --json) on the host and sets the fact C(netcfg), with
    C(netcfg.clean) and C(netcfg.problems) summing it up for a probe.
  - The host is clean when netcfgd runs, is ready, its config loaded without errors, and
    no managed namespace is failing or has drift.
author:
  - netcfg developers
extends_documentation_fragment:
  - netcfg.fleet.netcfg
attributes:
  check_mode:
    support: full
    description: Reads only.
  diff_mode:
    support: none
  facts:
    support: full
seealso:
  - module: netcfg.fleet.netcfg_apply
"""

EXAMPLES = r"""
- name: Read netcfgd's status
  netcfg.fleet.netcfg_facts:

- name: Probe - netcfgd is clean
  ansible.builtin.assert:
    that: ansible_facts.netcfg.clean
    fail_msg: "netcfg status: {{ ansible_facts.netcfg.problems | join('; ') }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts set.
  returned: always
  type: complex
  contains:
    netcfg:
      description: netcfgd's state.
      type: complex
      contains:
        running:
          description: Whether netcfgd answers on its control socket.
          type: bool
        clean:
          description: Running, ready, config loaded, no namespace failing or drifting.
          type: bool
        problems:
          description: Why the host is not clean, one line each.
          type: list
          elements: str
        trial:
          description: The change waiting for C(netcfg confirm), or null.
          type: dict
        status:
          description: C(netcfg status --json) as netcfgd answered it (null when not running).
          type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.netcfg.fleet.plugins.module_utils.netcfg_cli import (
    COMMON_ARGS, load_json, netcfg_executable, run_netcfg)


def problems_of(status):
    daemon = status.get("daemon") or {}
    found = []
    if not daemon.get("ready"):
        found.append("netcfgd is not ready (its first reconcile has not finished)")
    found += ["config: %s" % line for line in daemon.get("config_errors") or ()]
    for ns in status.get("namespaces") or ():
        name = ns.get("name") or "(host)"
        if ns.get("error"):
            found.append("namespace %s failing: %s" % (name, ns["error"]))
        if ns.get("drift"):
            found.append("namespace %s drifts: %s" % (name, "; ".join(ns["drift"][:5])))
    return found


def main():
    module = AnsibleModule(
        argument_spec=dict(COMMON_ARGS),
        supports_check_mode=True,
    )
    rc, out, err = run_netcfg(module, netcfg_executable(module), "status", "--json")
    if rc == 1 and not out.strip():   # exit 1: netcfgd is not running
        facts = dict(running=False, clean=False, trial=None, status=None,
                     problems=["netcfgd is not running: %s" % err.strip()])
    elif rc != 0:
        module.fail_json(msg="netcfg status --json failed (exit %d): %s" % (rc, err.strip()),
                         rc=rc, stderr=err)
    else:
        status = load_json(module, out, "netcfg status --json")
        problems = problems_of(status)
        facts = dict(running=True, clean=not problems, problems=problems, status=status,
                     trial=(status.get("daemon") or {}).get("trial"))
    module.exit_json(changed=False, ansible_facts=dict(netcfg=facts))


if __name__ == "__main__":
    main()
