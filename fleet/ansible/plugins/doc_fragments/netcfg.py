# -*- coding: utf-8 -*-
# Copyright: netcfg developers
# GNU General Public License v2.0 or later (see COPYING or https://www.gnu.org/licenses/gpl-2.0.txt)
"""The options every netcfg.fleet module takes to find netcfg on the host
(module_utils/netcfg_cli.py COMMON_ARGS is their argument spec)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  executable:
    description:
      - Path of the C(netcfg) command on the host (default C(netcfg) on PATH, else the
        one next to the remote Python).
    type: path
  run_dir:
    description:
      - netcfg's run directory (default C($NETCFG_RUN_DIR), else C(/run/netcfg)).
    type: path
"""
