"""Pure functions from a NetcfgPolicy and a node to what the node applies:
selection, the config directory's files, its hash, the slot count."""

from __future__ import annotations

import hashlib
import json


def selects(selector: dict[str, str] | None, labels: dict[str, str] | None) -> bool:
    """A node is selected when it has every label of the selector (as a
    Deployment's matchLabels; an empty selector selects every node)."""
    labels = labels or {}
    return all(labels.get(key) == value for key, value in (selector or {}).items())


def node_files(spec: dict, node: str) -> dict[str, str]:
    """The config directory the node applies: the templates, and vars.json
    with the policy's vars and, over them, its nodeVars for NODE."""
    files = dict(spec.get("templates") or {})
    variables = dict(spec.get("vars") or {})
    variables.update((spec.get("nodeVars") or {}).get(node) or {})
    files["vars.json"] = json.dumps(variables, indent=2, sort_keys=True) + "\n"
    return files


def config_hash(files: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return digest.hexdigest()[:16]


def max_unavailable(value: int | str | None, matched: int) -> int:
    """maxUnavailable as a count: N, or N% of the selected nodes rounded down
    and at least 1 (kubernetes-nmstate's rule); default 50%."""
    if value is None:
        value = "50%"
    if isinstance(value, str):
        return max(1, matched * int(value.rstrip("%")) // 100)
    return max(1, int(value))


def duration_seconds(text: str) -> int:
    """'90s' or '2m' (the CRD's pattern) as seconds."""
    return int(text[:-1]) * (60 if text.endswith("m") else 1)


def plan_text(plan: dict, limit: int = 16000) -> str:
    """The plan one operation a line (+ add, - delete, ~ set), as the Ansible
    module's diff shows it, cut to what an enactment holds."""
    marks = {"add": "+", "del": "-", "delete": "-", "remove": "-"}
    lines = []
    for batch in plan.get("batches") or ():
        for op in batch:
            action = str(op.get("action", ""))
            verb = action.rsplit("-", 1)[-1]
            lines.append(f"{marks.get(verb, '~')} {action} {op.get('name', '')} "
                         f"{op.get('subject', '')}".rstrip())
    text = "\n".join(lines)
    return text if len(text) <= limit else text[:limit - 4] + "\n..."
