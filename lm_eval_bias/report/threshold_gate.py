"""Absolute rules (``TASK[:METRIC] OP VALUE``) checked on each run's number.

With ``gate="interval"`` (and ``"strict"``, which is the interval gate for these rules) a rule must hold
for the whole 95% interval: a ``<=``/``<`` rule is checked on the interval's upper bound, a ``>=``/``>``
rule on its lower bound, so a pass means "demonstrably within the limit".

Each checked number is said with the documents it rests on (N), and a run that is partial
(``--limit``, a non-official data file, a subgroup selection) gets a note saying so; a note never
changes a rule's outcome. Results of one task in different versions (``versions`` in the results
files: the task definition changed between them) are not checked together: that is an error naming
the task, the versions and the files.
"""

from __future__ import annotations

import operator

from lm_eval_bias.metric_keys import metric_range
from lm_eval_bias.report.gate_rules import GATES, Outcome, Rule, refuse_unreachable
from lm_eval_bias.report.no_verdict import no_verdict
from lm_eval_bias.report.run import Metric, Run, version_text, versions_by_task
from lm_eval_bias.report.values import ResultsError, value_range

_OPERATORS = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt}


def _observed(metric: Metric, rule: Rule, gate: str) -> tuple[float | None, str]:
    """The number the rule is checked on, and how to describe it."""
    interval = (
        f" [{metric.ci_lower:g}, {metric.ci_upper:g}]"
        if metric.ci_lower is not None and metric.ci_upper is not None
        else ""
    )
    base = f"N={metric.base}"
    if not isinstance(metric.value, float):
        return None, f"{metric.value}, {base}"
    if gate == "estimate":
        return metric.value, f"{metric.value:g}{interval}, {base}"
    bound = metric.ci_upper if rule.op in ("<=", "<") else metric.ci_lower
    if bound is None:
        return None, f"{metric.value:g}, {base} (no interval, so the interval gate cannot decide)"
    side = "upper" if rule.op in ("<=", "<") else "lower"
    return bound, f"{metric.value:g}{interval}, {base}, {side} bound {bound:g}"


def _check_limit(rule: Rule, metric: Metric, bounds: tuple[float, float] | None) -> None:
    """A limit the metric can reach: one outside the metric's range, or at the end the rule's
    operator includes (``<= 100`` on a percentage), makes a rule that can never fail (or never
    pass), a typo rather than a gate."""
    if bounds is not None:
        refuse_unreachable(rule, rule.op, rule.threshold, metric.name, bounds)


def evaluate(rules: list[Rule], runs: list[Run], gate: str = "estimate") -> list[Outcome]:
    """Check each rule on every run that has the rule's task; a rule no run can answer fails.

    Parameters
    ----------
    rules : list of Rule
        The rules.
    runs : list of Run
        The runs, as :func:`lm_eval_bias.report.results.load_runs` returns them.
    gate : {"estimate", "interval", "strict"}
        What is compared with a limit: the point estimate, or (interval, strict) the bound of its 95%
        interval that is farther from passing (a number without that bound fails, and so does one on
        which every document gave no verdict: :func:`no_verdict`).

    Returns
    -------
    list of Outcome
        One per rule and run with the rule's task, its note naming a partial run and the run's ties or
        undecided documents; one failed outcome for a rule no run has.

    Raises
    ------
    ResultsError
        An unknown gate, a gated task found in several versions, or (for one of our tasks) a limit that
        makes a rule that can never fail or never pass (outside the metric's range, or at its end).
    """
    if gate not in GATES:
        raise ResultsError(f"gate must be one of {', '.join(GATES)}, got {gate!r}")
    gated = {rule.task for rule in rules}
    found = versions_by_task((run, task) for run in runs for task in run.tasks)
    mixed = {task: versions for task, versions in found.items() if task in gated}
    if mixed:
        # A limit is set for one task definition; a number of another version answers another question.
        raise ResultsError(
            "; ".join(
                f"task {task}: results of different task versions: {version_text(versions)}"
                for task, versions in mixed.items()
            )
            + ". A rule's limit holds for one definition of a task: re-run the older results with "
            "this version of lm-eval-bias, or check each version's files separately"
        )
    outcomes = []
    for rule in rules:
        matching = [run for run in runs if rule.task in run.tasks]
        if not matching:
            outcomes.append(Outcome(rule, "-", False, f"no results file has task {rule.task!r}"))
            continue
        for run in matching:
            try:
                metric = run.metric(rule.task, rule.metric)
            except ResultsError as error:
                outcomes.append(Outcome(rule, run.model, False, str(error)))
                continue
            if run.identity(rule.task) is not None:
                own = run.tasks[rule.task].get(metric.name)
                _check_limit(rule, metric, (metric_range if own is metric else value_range)(metric.name))
            outcomes.append(_limit_outcome(rule, run, metric, gate))
    return outcomes


def _limit_outcome(rule: Rule, run: Run, metric: Metric, gate: str) -> Outcome:
    """Whether one rule holds on one run's number (see :func:`evaluate`)."""
    observed, described = _observed(metric, rule, gate)
    base = run.base(rule.task)
    notes = [f"partial run ({run.path}): {'; '.join(base.partial)}"] if base.is_partial else []
    undecided = no_verdict(run, rule.task, metric.name)
    notes += [undecided.text] if undecided is not None else []
    note = "; ".join(notes)
    if observed is None:
        # No number, or no bound for the interval gate: the rule fails closed, never passes unchecked.
        why = "not a number" if not isinstance(metric.value, float) else "fails closed"
        return Outcome(rule, run.model, False, f"{metric.key} is {described}: {why}", note)
    if undecided is not None and undecided.every and gate != "estimate":
        return Outcome(rule, run.model, False, f"{metric.key} = {described}: no verdict: fails closed", note)
    passed = _OPERATORS[rule.op](observed, rule.threshold)
    return Outcome(rule, run.model, passed, f"{metric.key} = {described}", note)
