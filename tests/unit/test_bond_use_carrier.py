"""bond-use-carrier: a kernel that refuses a value is located at the
attribute's line (the value goes in a link-set after the create request)."""

from __future__ import annotations

import errno
import textwrap

from netcfg.apply.refusal import Refused, explain
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.kernel.nl import NetlinkError
from netcfg.model.model import Model
from netcfg.netlink.nlmsg import RTM_NEWLINK
from netcfg.plan.diff import diff


def _compile(tmp_path, text: str):
    path = tmp_path / "interfaces"
    path.write_text(textwrap.dedent(text))
    return compile_config(ConfigSource(path=str(path)))


def test_a_kernel_that_refuses_use_carrier_no_is_located_at_its_line(tmp_path):
    """Newer kernels keep bond use_carrier 1 only: the refusal of the link-set
    names bond-use-carrier's line, not the bond's stanza (it is sent after
    the create request for that)."""
    result = _compile(tmp_path, """\
        auto bond1
        iface bond1
            bond-slaves swp1
            bond-miimon 100
            bond-use-carrier no
        """)
    ops = diff(result.model, Model())
    carrier = [op for op in ops if op.action == "link-set" and op.name == "bond1"]
    assert [op.params for op in carrier] == [{"bond-use-carrier": False}]
    refused = Refused(carrier[0], NetlinkError(errno.EINVAL, RTM_NEWLINK,
                                               "option use_carrier: invalid value (0)"))
    message = explain(refused, result.model)
    assert message.startswith(f"{tmp_path / 'interfaces'}:5: error: bond1: "), message
    assert "use_carrier" in message
