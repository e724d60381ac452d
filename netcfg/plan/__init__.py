"""Planning: lower the desired model, diff it against current state, order
the operations into batches. Pure: values in, values out.

    desired --lower--> desired' --diff(current)--> operations --order--> Plan
"""

from __future__ import annotations

from netcfg.kinds.tunnel import LOCAL_DEV
from netcfg.model.gcpause import gc_paused
from netcfg.model.model import Model
from netcfg.plan.diff import diff
from netcfg.plan.hooks import plan_notes
from netcfg.plan.lower.lowering import lower
from netcfg.plan.planner import Plan, build_plan, requires_order


def make_plan(desired: Model, current: Model, lower_enabled: bool = True) -> Plan:
    with gc_paused():
        lowered, report = lower(desired, enabled=lower_enabled)
        plan = build_plan(diff(lowered, current), requires_order(lowered))
    plan.notes.extend(plan_notes(lowered, plan.operations))
    # Read from the kernel when netcfg applies (apply/tunnel_local.py), which
    # a plan from files alone cannot do: say what the tunnel will get.
    plan.notes.extend(f"{o.label()}: its local address is {o.attrs[LOCAL_DEV]}'s when netcfg "
                      f"applies ({LOCAL_DEV} at {o.where(LOCAL_DEV)})"
                      for o in lowered.interfaces.values() if LOCAL_DEV in o.attrs)
    plan.lowering = report
    return plan
