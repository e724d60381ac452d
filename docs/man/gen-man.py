#!/usr/bin/env python3
"""Write netcfg-interfaces(5) from the schemas: one section per kind, one entry
per attribute, with the value form and the description from
schemas/kinds/*.json (the single source of truth, as for `netcfg syntax-help`).

Standalone on purpose (standard library only, no netcfg import): the Debian
build runs it before anything is installed.

    docs/man/gen-man.py --schemas schemas --out DIR
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Kinds in the order a reader meets them; any kind not listed follows, sorted.
ORDER = ["common", "physical", "loopback", "dummy", "veth", "vlan", "macvlan", "bridge",
         "bridge-port", "bond", "vrf", "vxlan", "netns", "volume", "target"]


def roff(text: str) -> str:
    """Escape text for a roff body line: backslashes, minus signs, and a leading
    dot or quote (which roff would take for a request)."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    if text[:1] in (".", "'"):
        text = "\\&" + text
    return text


def value_form(schema: dict) -> str:
    """The value an attribute takes, in the words `netcfg syntax-help` uses."""
    if "enum" in schema:
        return "|".join(str(v) for v in schema["enum"])
    kind = schema.get("type")
    if kind == "boolean":
        return "yes|no"
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        return f"N ({low}\u2013{high})" if low is not None and high is not None else "N"
    if kind == "array":
        return "VALUE..." + (" (repeatable)" if schema.get("x-netcfg-repeat") else "")
    return "VALUE"


def kind_section(name: str, schema: dict) -> list[str]:
    lines = [f".SS {roff(name)}", roff(schema.get("description", ""))]
    props = schema.get("properties", {})
    if not props:
        lines.append(".PP\n(no attributes of its own)")
    for attr, spec in props.items():
        default = spec.get("default")
        text = spec.get("description", "")
        if default is not None and "default" not in text.lower():
            text += f" Default: {default}."
        lines += [".TP", f"\\fB{roff(attr)}\\fR \\fI{roff(value_form(spec))}\\fR", roff(text)]
    return lines


def load_kinds(schemas: Path) -> list[tuple[str, dict]]:
    kinds = {p.stem: json.loads(p.read_text()) for p in (schemas / "kinds").glob("*.json")}
    names = [k for k in ORDER if k in kinds] + sorted(k for k in kinds if k not in ORDER)
    return [(k, kinds[k]) for k in names]


def render(schemas: Path, version: str) -> str:
    head = (HERE / "netcfg-interfaces.5.head").read_text()
    tail = (HERE / "netcfg-interfaces.5.tail").read_text()
    body = [".SH ATTRIBUTES",
            "Generated from the JSON Schemas in schemas/kinds/; "
            "\\fBnetcfg syntax\\-help\\fR \\fIATTRIBUTE\\fR prints the same text. "
            "An attribute name may be written with _ for \\-."]
    for name, schema in load_kinds(schemas):
        body += kind_section(name, schema)
    return head.replace("@VERSION@", version) + "\n".join(body) + "\n" + tail


def read_version(root: Path) -> str:
    for line in (root / "netcfg" / "__init__.py").read_text().splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("\"'")
    return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemas", type=Path, default=HERE.parent.parent / "schemas")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    version = read_version(args.schemas.resolve().parent)   # schemas/ sits at the top
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "netcfg-interfaces.5").write_text(render(args.schemas, version))


if __name__ == "__main__":
    main()
