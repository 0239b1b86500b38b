"""Human-readable rendering of a comparison: the class, the three verdicts, and each difference with why."""

from __future__ import annotations

from promptops.compat.classify import Comparison
from promptops.compat.difference import Change
from promptops.core.escape import one_line


def _yes(flag: bool) -> str:
    return "yes" if flag else "no "


def render_text(comparison: Comparison, old_name: str, new_name: str) -> str:
    lines = [
        f"{old_name} -> {new_name}: {comparison.change}",
        f"  backward compatible:           {_yes(comparison.backward_compatible)}"
        "  (does the new schema accept every document the old one accepted?)",
        f"  forward compatible (strict):   {_yes(comparison.forward_compatible)}"
        "  (does the old schema accept every document the new one accepts?)",
        f"  forward compatible (tolerant): {_yes(comparison.forward_compatible_tolerant)}"
        "  (the same, for old parsers that ignore unknown properties)",
    ]
    differences = comparison.differences
    if not differences:
        lines.append("no differences: the schemas accept the same documents")
        return "\n".join(map(one_line, lines))
    lines.append(f"{len(differences)} difference{'s' if len(differences) != 1 else ''}:")
    for difference in differences:
        change = difference.change
        lines.append(f"  {change:<5}  {difference.path}  {difference.kind}")
        lines.append(f"         {difference.message}")
        if change is Change.PATCH:
            lines.append("         no effect on which documents are valid")
        else:
            verdict = "forces" if change is comparison.change else "alone would force"
            lines.append(f"         {verdict} {change}: {difference.reason}")
    return "\n".join(map(one_line, lines))
