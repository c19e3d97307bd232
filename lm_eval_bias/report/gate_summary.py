"""The text ``lm-eval-bias check`` prints: one PASS or FAIL line per rule checked, and the counts.

The gate's parts live elsewhere: the rules, the gates (``GATES``) and the policy file that gives them
in :mod:`.gate_rules`; absolute rules ``TASK[:METRIC] OP VALUE`` checked on each run's number in
:mod:`.threshold_gate`; worsening rules ``TASK[:METRIC]=MARGIN`` checked on the paired comparison of a
candidate run with its baseline in :mod:`.worsening_gate`; the documents without a verdict behind a
number in :mod:`.no_verdict`.

The heading says what the gate (:data:`.gate_rules.GATES`) compared: ``estimate`` checks point estimates;
``interval`` checks the bound of a number's 95% interval that is farther from passing; ``strict`` is
``interval`` for absolute rules, and passes a worsening rule only when the worsening lies demonstrably
within its margin.
"""

from __future__ import annotations

from lm_eval_bias.report.gate_rules import Outcome, WorseningRule
from lm_eval_bias.report.outputs import text_line
from lm_eval_bias.report.worsening_gate import SIGNIFICANCE


def _summary_heading(outcomes: list[Outcome], gate: str) -> str:
    """What the gate compared: point estimates or interval bounds, and for worsening rules which side
    of the margin their interval must lie."""
    paired = [o for o in outcomes if isinstance(o.rule, WorseningRule)]
    parts = (
        []
        if outcomes and len(paired) == len(outcomes)
        else ["point estimates" if gate == "estimate" else "95% interval bounds"]
    )
    if paired:
        parts.append(
            "worsening from the baseline: fails unless its paired 95% interval (of a score: its betting bound, valid "
            "at every n) lies wholly below the margin"
            if gate == "strict"
            else "worsening from the baseline: fails when its paired 95% interval lies wholly above the margin "
            f"and its paired test has p < {SIGNIFICANCE:g}"
        )
    return f"lm-eval-bias check ({'; '.join(parts)})"


def summary(outcomes: list[Outcome], gate: str) -> str:
    """What ``lm-eval-bias check`` prints.

    Parameters
    ----------
    outcomes : list of Outcome
        As :func:`.threshold_gate.evaluate` and :func:`.worsening_gate.evaluate_worsening`
        return them.
    gate : str
        The gate they were checked with.

    Returns
    -------
    str
        One PASS or FAIL line per outcome (with its note) and the count of each.
    """
    lines = [_summary_heading(outcomes, gate)]
    for outcome in outcomes:
        verdict = "PASS" if outcome.passed else "FAIL"
        lines.append(text_line(f"  {verdict}  {outcome.rule}   [{outcome.model}]  {outcome.message}"))
        if outcome.note:
            lines.append(text_line(f"        note: {outcome.note}"))
    failed = sum(not o.passed for o in outcomes)
    lines.append(f"{len(outcomes) - failed} passed, {failed} failed")
    return "\n".join(lines)
