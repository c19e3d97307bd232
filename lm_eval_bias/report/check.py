"""Pass/fail gates on results files, for CI pipelines.

A rule is ``TASK[:METRIC] OP VALUE`` with OP one of ``<=``, ``>=``, ``<``,
``>`` (``--max TASK=V`` is ``TASK <= V``, ``--min TASK=V`` is ``TASK >= V``).
With ``gate="interval"`` a rule must hold for the whole 95% interval: a
``<=``/``<`` rule is checked on the interval's upper bound, a ``>=``/``>`` rule
on its lower bound, so a pass means "demonstrably within the limit".

Each checked number is printed with the documents it rests on (N), and a run
that is partial (``--limit``, a non-official data file, a subgroup selection)
gets a note saying so; a note never changes a rule's outcome. Results of one task in different
versions (``versions`` in the results files: the task definition changed between them) are not
checked together: that is an error naming the task, the versions and the files.
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from lm_eval_bias.metric_keys import metric_range, range_text
from lm_eval_bias.readers import loads_yaml
from lm_eval_bias.report.outputs import text_line
from lm_eval_bias.report.results import read_text
from lm_eval_bias.report.run import Metric, Run, version_text, versions_by_task
from lm_eval_bias.report.values import ResultsError, value_range

GATES = ("estimate", "interval")
POLICY_KEYS = frozenset({"gate", "rules"})
_OPERATORS = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt}
_RULE = re.compile(r"^\s*(?P<task>[\w.-]+)(?::(?P<metric>[\w.,-]+))?\s*(?P<op><=|>=|<|>|=)\s*(?P<value>\S+)\s*$")


@dataclass(frozen=True)
class Rule:
    """A limit on one number of one task: ``TASK[:METRIC] OP THRESHOLD`` (no metric: the headline one)."""

    task: str
    metric: str | None
    op: str
    threshold: float
    where: str = field(default="", compare=False)  # where a policy file gives it ("p.yaml, line 3: rules[1]")

    def __str__(self) -> str:
        return f"{self.task}{':' + self.metric if self.metric else ''} {self.op} {self.threshold:g}"


@dataclass(frozen=True)
class Outcome:
    """Whether one rule held on one run's number, and what was compared."""

    rule: Rule
    model: str
    passed: bool
    message: str
    note: str = ""  # e.g. that the run is partial; said beside the outcome, never changes it


def parse_rule(text: str, bare_equals: str | None = None) -> Rule:
    """A rule from its text.

    Parameters
    ----------
    text : str
        ``TASK[:METRIC] OP VALUE`` with OP one of ``<=``, ``>=``, ``<``, ``>``: ``"winoqueer:bias_score<=65"``.
    bare_equals : str or None
        The operator a bare ``=`` stands for (``--max TASK=VALUE`` gives ``"<="``); None refuses ``=``.

    Returns
    -------
    Rule
        The rule.

    Raises
    ------
    ResultsError
        A text that is not a rule, or a limit that is not a finite number.
    """
    match = _RULE.match(text)
    if not match:
        raise ResultsError(
            f"cannot read the rule {text!r}; write TASK[:METRIC] OP VALUE, e.g. winoqueer:bias_score<=65"
        )
    op = match["op"]
    if op == "=":
        if bare_equals is None:
            raise ResultsError(f"rule {text!r}: use <=, >=, < or > (or --max/--min TASK=VALUE)")
        op = bare_equals
    try:
        threshold = float(match["value"])
    except ValueError:
        raise ResultsError(f"rule {text!r}: {match['value']!r} is not a number") from None
    if not math.isfinite(threshold):
        raise ResultsError(f"rule {text!r}: the limit must be a finite number, got {match['value']!r}")
    return Rule(match["task"], match["metric"], op, threshold)


def load_policy(path: str | Path) -> tuple[list[Rule], str | None]:
    """Rules (and an optional gate) from a YAML policy file::

    gate: interval          # optional: estimate (default) or interval
    rules:
      - winoqueer:bias_score <= 65
      - tango_misgender:consistency_neo >= 0.5

    Parameters
    ----------
    path : str or Path
        The policy file.

    Returns
    -------
    (list of Rule, str or None)
        The rules, each knowing where the file gives it, and the gate (None when not given).

    Raises
    ------
    ResultsError
        A file that cannot be read, a key given twice or unknown, a merge key, no rules, an unknown
        gate, or a rule that cannot be read (the message names its line).
    """
    import yaml

    path = Path(path)
    text = read_text(path, "policy")
    try:
        # A key given twice (a second, looser "rules:") is refused, not silently kept as the last; so is
        # any merge key ("<<: *strict"), beside which a written "rules:" would silently replace the merged one.
        policy = loads_yaml(text, str(path), merge_keys=False)
    except yaml.YAMLError as error:
        raise ResultsError(f"{path}: cannot read the policy: {error}") from None
    if isinstance(policy, dict):
        unknown = sorted(set(policy) - POLICY_KEYS)
        if unknown:
            # A misspelt "gate" would silently fall back to the looser estimate gate.
            hints = [difflib.get_close_matches(key, sorted(POLICY_KEYS), n=1, cutoff=0.6) for key in unknown]
            raise ResultsError(
                f"{path}: unknown key(s) "
                + ", ".join(
                    f"{key!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "") for key, hint in zip(unknown, hints)
                )
                + f"; a policy has {' and '.join(sorted(POLICY_KEYS))}"
            )
    if not isinstance(policy, dict) or not isinstance(policy.get("rules"), list) or not policy["rules"]:
        raise ResultsError(f"{path}: a policy needs a non-empty 'rules' list")
    gate = policy.get("gate")
    if gate is not None and gate not in GATES:
        raise ResultsError(f"{path}: gate must be one of {', '.join(GATES)}, got {gate!r}")
    lines = _rule_lines(text)
    return [_policy_rule(path, index, rule, lines) for index, rule in enumerate(policy["rules"])], gate


def _policy_rule(path: Path, index: int, rule, lines: list[int]) -> Rule:
    """The policy's ``index``-th rule; an error names the file, the rule's line and its place in ``rules``."""
    where = f"{path}" + (f", line {lines[index]}" if index < len(lines) else "") + f": rules[{index}]"
    if isinstance(rule, (list, dict)):
        kind = "a list" if isinstance(rule, list) else "a mapping"
        raise ResultsError(
            f"{where} is {kind} ({text_line(repr(rule))}), not a rule: YAML reads brackets and 'key: value' as "
            'structure; write the rule as text, e.g. - "winoqueer:bias_score <= 65"'
        )
    try:
        return replace(parse_rule(str(rule)), where=where)
    except ResultsError as error:
        raise ResultsError(f"{where}: {error}") from None


def _rule_lines(text: str) -> list[int]:
    """The line of each item of a policy's ``rules`` list (for messages); empty where there is none."""
    import yaml

    node = yaml.compose(text, Loader=yaml.SafeLoader)
    for key, value in node.value if isinstance(node, yaml.MappingNode) else ():
        if key.value == "rules" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


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
    if bounds is None:
        return
    low, high = bounds
    if rule.op in ("<=", "<"):
        never_fails = rule.threshold > high or (rule.op == "<=" and rule.threshold == high)
    else:
        never_fails = rule.threshold < low or (rule.op == ">=" and rule.threshold == low)
    outside = rule.threshold < low or rule.threshold > high
    if never_fails or outside:
        raise ResultsError(
            (f"{rule.where}: " if rule.where else "")
            + f"rule '{rule}': {metric.name} takes values {range_text(bounds)}, so a limit of {rule.threshold:g} "
            f"{'is outside that range and ' if outside else ''}makes a rule that can "
            f"{'never fail' if never_fails else 'never pass'}; give a limit within the range"
        )


def evaluate(rules: list[Rule], runs: list[Run], gate: str = "estimate") -> list[Outcome]:
    """Check each rule on every run that has the rule's task; a rule no run can answer fails.

    Parameters
    ----------
    rules : list of Rule
        The rules.
    runs : list of Run
        The runs, as :func:`lm_eval_bias.report.results.load_runs` returns them.
    gate : {"estimate", "interval"}
        What is compared with a limit: the point estimate, or the bound of its 95% interval that is
        farther from passing (a number without that bound fails).

    Returns
    -------
    list of Outcome
        One per rule and run with the rule's task; one failed outcome for a rule no run has.

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
            observed, described = _observed(metric, rule, gate)
            base = run.base(rule.task)
            note = f"partial run ({run.path}): {'; '.join(base.partial)}" if base.is_partial else ""
            if observed is None:
                # No number, or no bound for the interval gate: the rule fails closed, never passes unchecked.
                why = "not a number" if not isinstance(metric.value, float) else "fails closed"
                outcomes.append(Outcome(rule, run.model, False, f"{metric.key} is {described}: {why}", note))
                continue
            passed = _OPERATORS[rule.op](observed, rule.threshold)
            outcomes.append(Outcome(rule, run.model, passed, f"{metric.key} = {described}", note))
    return outcomes


def summary(outcomes: list[Outcome], gate: str) -> str:
    """What ``lm-eval-bias check`` prints.

    Parameters
    ----------
    outcomes : list of Outcome
        As :func:`evaluate` returns them.
    gate : str
        The gate they were checked with.

    Returns
    -------
    str
        One PASS or FAIL line per outcome (with its note) and the count of each.
    """
    lines = [f"lm-eval-bias check ({'point estimates' if gate == 'estimate' else '95% interval bounds'})"]
    for outcome in outcomes:
        verdict = "PASS" if outcome.passed else "FAIL"
        lines.append(text_line(f"  {verdict}  {outcome.rule}   [{outcome.model}]  {outcome.message}"))
        if outcome.note:
            lines.append(text_line(f"        note: {outcome.note}"))
    failed = sum(not o.passed for o in outcomes)
    lines.append(f"{len(outcomes) - failed} passed, {failed} failed")
    return "\n".join(lines)
