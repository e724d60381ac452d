# -*- coding: utf-8 -*-
# Copyright: netcfg developers
# GNU General Public License v2.0 or later (see COPYING or https://www.gnu.org/licenses/gpl-2.0.txt)
"""The controller's half of netcfg_apply: read the config named by `src` (a
directory or one .tmpl file, found like a template's src: files/ of the role
or playbook first) and pass its text to the module, so the module sees the
same files on every host without a copy step of its own."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

# What netcfg reads from a config directory (netcfg/compile/pipeline.py).
TEMPLATE_SUFFIX = ".tmpl"
VARS_FILE = "vars.json"
LIB_DIR = "lib"
MAX_BYTES = 8 * 1024 * 1024   # module arguments travel in one SSH message


def read_config(path):
    """relative name -> text, of what netcfg would read at PATH."""
    if os.path.isfile(path):
        if not path.endswith(TEMPLATE_SUFFIX):
            raise AnsibleActionFail("src %s: a single file must be a %s template"
                                    % (path, TEMPLATE_SUFFIX))
        names = [os.path.basename(path)]
        path = os.path.dirname(path)
    elif os.path.isdir(path):
        names = sorted(n for n in os.listdir(path)
                       if n.endswith(TEMPLATE_SUFFIX) or n == VARS_FILE)
        lib = os.path.join(path, LIB_DIR)
        if os.path.isdir(lib):
            names += sorted(os.path.join(LIB_DIR, n) for n in os.listdir(lib)
                            if os.path.isfile(os.path.join(lib, n)))
        if not any(n.endswith(TEMPLATE_SUFFIX) for n in names):
            raise AnsibleActionFail("src %s has no *%s files" % (path, TEMPLATE_SUFFIX))
    else:
        raise AnsibleActionFail("src %s: no such file or directory" % path)
    files, size = {}, 0
    for name in names:
        with open(os.path.join(path, name), "rb") as f:
            data = f.read()
        size += len(data)
        try:
            files[name] = to_text(data, errors="strict")
        except UnicodeError:
            raise AnsibleActionFail("src %s: %s is not UTF-8 text" % (path, name))
    if size > MAX_BYTES:
        raise AnsibleActionFail("src %s: %d bytes of config, more than %d"
                                % (path, size, MAX_BYTES))
    return files


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("src", "vars", "dest", "confirm_timeout", "executable", "run_dir"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        src = args.get("src")
        if not src:
            raise AnsibleActionFail("src is required: the config directory or .tmpl file")
        try:
            found = self._find_needle("files", src)
        except Exception:   # not under files/: a path as given (absolute or relative)
            found = os.path.abspath(os.path.expanduser(src))
        args["files"] = read_config(found)
        args["src"] = found
        result.update(self._execute_module(module_name="netcfg.fleet.netcfg_apply",
                                           module_args=args, task_vars=task_vars))
        return result
