"""Model objects and operations built by hand, as the compiler and planner
build them, or compiled from a config's text; shared by the unit and kernel
tiers (tests/conftest.py puts this directory on the import path)."""

from __future__ import annotations

import textwrap

from netcfg.compile.pipeline import Compiled, ConfigSource, compile_config
from netcfg.kinds import registry
from netcfg.model.model import IFACE, ConfigObject, Model
from netcfg.plan.ops import LINK_ADD, Operation


def iface(name: str, kind: str, netns: str = "", *, auto: bool = False, implicit: bool = False,
          **attrs) -> ConfigObject:
    """An interface; attribute keywords use _ for - (bridge_ports=...)."""
    return ConfigObject(IFACE, name, kind, netns=netns, auto=auto, implicit=implicit,
                        attrs={k.replace("_", "-"): v for k, v in attrs.items()})


def model(*objects: ConfigObject, namespaces=(), masters=None) -> Model:
    """A model of these objects (interfaces by key, others in their section)
    and ``namespaces`` (netns objects); ``masters``: {port key: master key}."""
    m = Model()
    for o in [*objects, *namespaces]:
        if o.section == IFACE:
            m.interfaces[o.key] = o
        else:
            m.section(o.section)[o.name] = o
    m.masters.update(masters or {})
    return m


def link_add(obj: ConfigObject, **extra) -> Operation:
    """A link-add as plan/diff.py builds it: the kind's create_params, then
    create-time attributes."""
    params = {"kind": obj.kind, **registry.kind(obj.kind).create_params(obj), **extra}
    return Operation(LINK_ADD, obj.netns, obj.name, params=params)


def op(action: str, name: str, subject: str = "", netns: str = "", **params) -> Operation:
    return Operation(action, netns, name, subject, params)


def compiled(tmp_path, text: str, name: str = "interfaces") -> Compiled:
    """``text`` (dedented) written to tmp_path/``name`` and compiled as
    `netcfg check -c` compiles that file (a .tmpl name is rendered first)."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return compile_config(ConfigSource(path=str(path)))


def brought_up(result: Compiled) -> set[str]:
    """The names of the interfaces a compiled config brings up (auto, or needed by one)."""
    return {name for (_, name), obj in result.model.interfaces.items() if obj.auto}
