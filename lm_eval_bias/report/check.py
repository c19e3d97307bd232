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

Against a baseline run (``check CANDIDATE --baseline BASELINE``), a worsening rule
``TASK[:METRIC]=MARGIN`` (``--max-worsening``, or the policy's ``max_worsening:`` mapping) bounds
how much further from the metric's ideal value (its task's YAML metadata) the candidate may be
than the baseline, in the metric's units, on the documents both runs scored
(:func:`lm_eval_bias.report.compare.compare_runs`): the rule fails when the paired 95% interval of
the worsening lies wholly above the margin and the paired test finds the change (p < 0.05): worse by
more than the margin, demonstrably; with
``gate="strict"`` it passes only when the worsening lies demonstrably within the margin: for yes/no
outcomes compared by exact McNemar, when that interval lies wholly below it (its upper end falls below
the true worsening at most 2.5% of the time at every n); for every other number (scores such as
toxicity, gaps, ranges and spreads between groups, outcomes compared template by template), when the
betting bound of the worsening (``strict_upper`` of the comparison:
:mod:`lm_eval_bias.stats.bounded_means`), which holds at every n, lies below it; the verdict quotes that
bound. A number without such a bound (a correlation, a metric without a bounded range) fails ``strict``,
saying why. For the absolute rules, ``strict`` is the ``interval`` gate. A margin the worsening can never
exceed (``w = max(|low - ideal|, |high - ideal|)`` or more, for a metric with values ``[low, high]``) is
refused, as a limit outside a metric's range is; a margin of 0 is not (under ``strict`` it asks for a
demonstrated improvement). A comparison too small to show anything (no interval of the worsening: too
few documents or clusters, or not computable; or fewer than :data:`FEWEST_DOCUMENTS` documents, on which
no paired test can find a change at p < :data:`SIGNIFICANCE`) fails ``strict``, quoting why; under the
other gates it does not fail and its note says that nothing could be shown. A comparison with no
worsening at all (no document has a value in both runs) fails closed under every gate. Baseline and
candidate that are one run (the same results file, or copies with the same results and samples) are
named in every worsening outcome's note ("nothing was compared") and fail ``strict``.

Ties and undecided documents (the shares each task's metadata names in ``no_verdict``) are said in
the note of every outcome on a number they bear on, with how the number treats them (one rule for
every task: tasks/README.md, "Ties and undecided answers"). A number on which every document gave no
verdict is no verdict: its rule fails under the ``interval`` and ``strict`` gates and is flagged in its
note ("every pair tied ...: no verdict") under ``estimate``.
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from lm_eval_bias import task_metadata
from lm_eval_bias.metric_keys import metric_range, range_text
from lm_eval_bias.readers import loads_yaml
from lm_eval_bias.report.outputs import text_line
from lm_eval_bias.report.results import read_text
from lm_eval_bias.report.run import Metric, Run, version_text, versions_by_task
from lm_eval_bias.report.values import ResultsError, value_range
from lm_eval_bias.stats.paired_resampling import minimum_units

GATES = ("estimate", "interval", "strict")
POLICY_KEYS = frozenset({"gate", "max_worsening", "rules"})
_OPERATORS = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt}
_RULE = re.compile(r"^\s*(?P<task>[\w.-]+)(?::(?P<metric>[\w.,-]+))?\s*(?P<op><=|>=|<|>|=)\s*(?P<value>\S+)\s*$")
_WORSENING_RULE = re.compile(r"^\s*(?P<task>[\w.-]+)(?::(?P<metric>[\w.,-]+))?\s*=\s*(?P<value>\S+)\s*$")

# How a strict verdict names the bound it read where the interval is not exact.
STRICT_BOUND = "betting bound, valid at every n"
# A rule fails only where the paired test also finds the change at this level.
SIGNIFICANCE = 0.05
# The fewest paired documents on which a paired test can find a change at SIGNIFICANCE (6: with n
# documents the smallest two-sided p-value of an exact swap or McNemar test is 2 ** (1 - n)).
FEWEST_DOCUMENTS = minimum_units(1 - SIGNIFICANCE)


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
class WorseningRule:
    """At most ``margin`` further from the ideal value than the baseline, in the metric's units, on one
    metric of one task: ``TASK[:METRIC]=MARGIN`` (no metric: the headline one)."""

    task: str
    metric: str | None
    margin: float
    where: str = field(default="", compare=False)  # where a policy file gives it

    def __str__(self) -> str:
        return f"{self.task}{':' + self.metric if self.metric else ''} worsening <= {self.margin:g}"


@dataclass(frozen=True)
class Policy:
    """What a policy file holds: absolute rules, worsening rules and the gate (None when not given)."""

    rules: tuple[Rule, ...]
    worsening: tuple[WorseningRule, ...]
    gate: str | None


@dataclass(frozen=True)
class Outcome:
    """Whether one rule held on one run's number, and what was compared."""

    rule: Rule | WorseningRule
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


def parse_worsening_rule(text: str) -> WorseningRule:
    """A worsening rule from its text.

    Parameters
    ----------
    text : str
        ``TASK[:METRIC]=MARGIN``: ``"winoqueer=2"``, ``"winoqueer:bias_score_gay=5"``.

    Returns
    -------
    WorseningRule
        The rule.

    Raises
    ------
    ResultsError
        A text that is not a worsening rule, or a margin that is not a finite number at least 0.
    """
    match = _WORSENING_RULE.match(text)
    if not match:
        raise ResultsError(
            f"cannot read the worsening rule {text!r}; write TASK[:METRIC]=MARGIN, e.g. winoqueer:bias_score=2"
        )
    return WorseningRule(match["task"], match["metric"], _margin(match["value"], text))


def _margin(value, text: str) -> float:
    """A worsening rule's margin: a finite number at least 0, in the metric's units."""
    try:
        margin = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        margin = math.nan
    if not math.isfinite(margin) or margin < 0:
        raise ResultsError(
            f"worsening rule {text!r}: the margin must be a finite number at least 0 (how much worse the "
            f"candidate may be, in the metric's units), got {value!r}"
        )
    return margin


def load_policy(path: str | Path) -> tuple[list[Rule], str | None]:
    """The absolute rules and the gate of a policy file (:func:`read_policy`), for callers that gate
    one set of runs.

    Parameters
    ----------
    path : str or Path
        The policy file.

    Returns
    -------
    (list of Rule, str or None)
        The rules and the gate (None when not given).
    """
    policy = read_policy(path)
    return list(policy.rules), policy.gate


def read_policy(path: str | Path) -> Policy:
    """Rules (and an optional gate) from a YAML policy file::

    gate: interval          # optional: estimate (default), interval or strict
    rules:
      - winoqueer:bias_score <= 65
      - tango_misgender:consistency_neo >= 0.5
    max_worsening:          # optional; needs check --baseline
      winoqueer: 2
      winoqueer:bias_score_gay: 5

    Parameters
    ----------
    path : str or Path
        The policy file.

    Returns
    -------
    Policy
        The rules and worsening rules, each knowing where the file gives it, and the gate.

    Raises
    ------
    ResultsError
        A file that cannot be read, a key given twice or unknown, a merge key, neither rules nor
        worsening rules, an unknown gate, or a rule or margin that cannot be read (the message names
        its line).
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
                + f"; a policy has {', '.join(sorted(POLICY_KEYS)[:-1])} and {sorted(POLICY_KEYS)[-1]}"
            )
    if not isinstance(policy, dict) or not (policy.get("rules") or policy.get("max_worsening")):
        raise ResultsError(f"{path}: a policy needs a non-empty 'rules' list or 'max_worsening' mapping")
    if not isinstance(policy.get("rules", []), list):
        raise ResultsError(f"{path}: 'rules' must be a list of rules, e.g. - winoqueer:bias_score <= 65")
    if not isinstance(policy.get("max_worsening", {}), dict):
        raise ResultsError(f"{path}: 'max_worsening' must be a mapping of TASK[:METRIC] to a margin, e.g. winoqueer: 2")
    gate = policy.get("gate")
    if gate is not None and gate not in GATES:
        raise ResultsError(f"{path}: gate must be one of {', '.join(GATES)}, got {gate!r}")
    lines = _rule_lines(text, "rules")
    rules = tuple(_policy_rule(path, index, rule, lines) for index, rule in enumerate(policy.get("rules", [])))
    lines = _rule_lines(text, "max_worsening")
    worsening = tuple(
        _policy_worsening_rule(path, index, target, margin, lines)
        for index, (target, margin) in enumerate(policy.get("max_worsening", {}).items())
    )
    return Policy(rules, worsening, gate)


def _policy_worsening_rule(path: Path, index: int, target, margin, lines: list[int]) -> WorseningRule:
    """The policy's ``index``-th worsening rule (``TASK[:METRIC]: MARGIN``); an error names its line."""
    where = f"{path}" + (f", line {lines[index]}" if index < len(lines) else "") + f": max_worsening[{target!r}]"
    text = f"{target}={margin}"
    match = _WORSENING_RULE.match(f"{target}=0")
    if not isinstance(target, str) or not match:
        raise ResultsError(f"{where}: write TASK[:METRIC]: MARGIN, e.g. winoqueer:bias_score: 2")
    try:
        return WorseningRule(match["task"], match["metric"], _margin(margin, text), where)
    except ResultsError as error:
        raise ResultsError(f"{where}: {error}") from None


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


def _rule_lines(text: str, name: str) -> list[int]:
    """The line of each item of a policy's ``rules`` list or ``max_worsening`` mapping (for messages);
    empty where there is none."""
    import yaml

    node = yaml.compose(text, Loader=yaml.SafeLoader)
    for key, value in node.value if isinstance(node, yaml.MappingNode) else ():
        if key.value == name and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
        if key.value == name and isinstance(value, yaml.MappingNode):
            return [item.start_mark.line + 1 for item, _ in value.value]
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
    if bounds is not None:
        _refuse_unreachable(rule, rule.op, rule.threshold, metric.name, bounds)


def _refuse_unreachable(rule: Rule | WorseningRule, op: str, limit: float, what: str, bounds) -> None:
    """Refuse a limit that makes a rule which can never fail or never pass.

    Parameters
    ----------
    rule : Rule or WorseningRule
        The rule, for the message (with where its policy file gives it).
    op : str
        The operator the limit is checked with: a worsening rule's margin is a ``<=`` limit.
    limit : float
        The limit.
    what : str
        What takes values within ``bounds``: ``"bias_score"``, ``"the worsening of toxicity (...)"``.
    bounds : (float, float)
        The values ``what`` can take.

    Raises
    ------
    ResultsError
        A limit outside ``bounds``, or at the end ``op`` includes.
    """
    low, high = bounds
    if op in ("<=", "<"):
        never_fails = limit > high or (op == "<=" and limit == high)
    else:
        never_fails = limit < low or (op == ">=" and limit == low)
    outside = limit < low or limit > high
    if never_fails or outside:
        raise ResultsError(
            (f"{rule.where}: " if rule.where else "")
            + f"rule '{rule}': {what} takes values {range_text(bounds)}, so a limit of {limit:g} "
            f"{'is outside that range and ' if outside else ''}makes a rule that can "
            f"{'never fail' if never_fails else 'never pass'}; give a limit within the range"
        )


def _check_margin(rule: WorseningRule, metric) -> None:
    """A margin the worsening can reach: the worsening ``|candidate - ideal| - |baseline - ideal|`` of a
    metric with values ``[low, high]`` and ideal value ``v`` lies within ``[-w, w]``, ``w = max(|low - v|,
    |high - v|)``, so a margin of ``w`` or more makes a rule that can never fail."""
    bounds = metric_range(metric.metric)
    if bounds is None or metric.ideal is None:
        return
    widest = max(abs(bounds[0] - metric.ideal), abs(bounds[1] - metric.ideal))
    what = (
        f"the worsening of {metric.metric} ({metric.metric} takes values {range_text(bounds)}, its ideal value is "
        f"{metric.ideal:g})"
    )
    _refuse_unreachable(rule, "<=", rule.margin, what, (-widest, widest))


@dataclass(frozen=True)
class NoVerdict:
    """What a run's documents without a verdict (ties, undecided) do to one of its numbers."""

    text: str  # "12 of 90 pairs tied (winoqueer:tie_pct = 13.3): they count as not stereotyped"
    every: bool  # every document gave no verdict: the number is none


def no_verdict(run: Run, task: str, name: str) -> NoVerdict | None:
    """How many of the documents behind a metric tied or were undecided, and how the metric treats them.

    Parameters
    ----------
    run : Run
        The run.
    task : str
        Its task.
    name : str
        The metric (``bias_score_gay``), without its filter.

    Returns
    -------
    NoVerdict or None
        None where the task reports no share of ties or undecided documents for the metric, or a share of 0.
        The share is the metric's own group's where the task reports one, else the task's.
    """
    # the run's own declaration; the package's task's for a results file written before tasks declared it
    identities = (run.identity(task), task_metadata.shipped_identity(task))
    found = next((i.no_verdict_share(name) for i in identities if i is not None and i.no_verdict), None)
    metrics = run.tasks.get(task, {})
    if found is None or found[0].share not in metrics:
        return None
    kind, head = found
    own = kind.share + name[len(head) :]
    share = metrics[own] if own in metrics and metric_range(own) == metric_range(kind.share) else metrics[kind.share]
    bounds = metric_range(share.name)
    if not isinstance(share.value, float) or share.value <= 0 or bounds is None:
        return None
    fraction = share.value / bounds[1]
    unit = run.base(task).unit
    shown = f"{share.key} = {share.value:g}"
    if fraction >= 1:
        return NoVerdict(f"every {unit.removesuffix('s')} {kind.happened} ({shown}): no verdict; {kind.counted}", True)
    count = fraction * share.n if share.n is not None else None
    if count is not None and math.isclose(count, round(count), abs_tol=1e-6):
        how_many = f"{round(count):,} of {share.n:,} {unit}"
    else:
        how_many = f"{fraction * 100:.3g}% of the {unit}"
    return NoVerdict(f"{how_many} {kind.happened} ({shown}): {kind.counted}", False)


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


def _compared(comparison, rule: WorseningRule):
    """The task and metric of the comparison a worsening rule names; an error names what is missing,
    with close matches."""
    where = f"{rule.where}: " if rule.where else ""
    tasks = {task.task: task for task in comparison.tasks}
    if rule.task not in tasks:
        skipped = [reason for reason in comparison.skipped if re.match(rf"{re.escape(rule.task)}\b(?![.-])", reason)]
        close = difflib.get_close_matches(rule.task, sorted(tasks), n=3, cutoff=0.6)
        raise ResultsError(
            f"{where}rule '{rule}': the comparison has no task {rule.task!r}"
            + (f" ({'; '.join(skipped)})" if skipped else "")
            + (f"; similar: {', '.join(close)}" if close else "")
            + f"; tasks compared: {', '.join(sorted(tasks)) or 'none'}"
        )
    task = tasks[rule.task]
    name = rule.metric or task.headline_metric
    name = name[: -len(",none")] if name.endswith(",none") else name
    metrics = {metric.metric: metric for metric in task.metrics}
    if name not in metrics:
        close = difflib.get_close_matches(name, sorted(metrics), n=3, cutoff=0.6)
        raise ResultsError(
            f"{where}rule '{rule}': task {rule.task} has no compared metric {name!r}"
            + (f"; similar: {', '.join(close)}" if close else "")
            + f"; compared: {', '.join(metrics) or 'none'}"
        )
    metric = metrics[name]
    if metric.ideal is None:
        raise ResultsError(
            f"{where}rule '{rule}': {rule.task}'s metadata declares no ideal value for {name}, so 'worse' is not "
            "defined for it; gate it with an absolute rule (--max, --min) instead"
        )
    return task, metric


@dataclass(frozen=True)
class Sides:
    """What the files of a comparison's two runs say beyond the comparison itself."""

    same: str  # "baseline and candidate are the same run (...): nothing was compared", or ""
    runs: tuple[tuple[str, Run], ...]  # ("baseline", run), ("candidate", run): each whose results file exists


def read_sides(comparison) -> Sides:
    """Whether a comparison's baseline and candidate are one run, and each run, from the files it names.

    Parameters
    ----------
    comparison : Comparison
        As :func:`lm_eval_bias.report.compare.compare_runs` returns it.

    Returns
    -------
    Sides
        One run: the same results file (the same resolved path, or a link to it), or two results files with
        the same bytes whose samples files of the compared tasks have the same bytes (a copied run folder).
        A side whose results file does not exist (a comparison made by hand) has no run.

    Raises
    ------
    ResultsError
        A results file the reader refuses.
    """
    from lm_eval_bias.report.compare_inputs import read_run, samples_path

    paths = {"baseline": Path(comparison.baseline_path), "candidate": Path(comparison.candidate_path)}
    found = {side: read_run(path, side) for side, path in paths.items() if path.is_file()}
    base, cand = paths["baseline"], paths["candidate"]
    same = ""
    if base.resolve() == cand.resolve() or (len(found) == 2 and base.samefile(cand)):
        same = f"baseline and candidate are the same run ({base.resolve()}): nothing was compared"
    elif len(found) == 2 and base.read_bytes() == cand.read_bytes():
        tasks = [task.task for task in comparison.tasks]
        samples = [(samples_path(found["baseline"], task), samples_path(found["candidate"], task)) for task in tasks]
        if all(first.read_bytes() == second.read_bytes() for first, second in samples):
            same = (
                f"baseline and candidate are the same run ({base} and {cand} hold the same results and samples): "
                "nothing was compared"
            )
    return Sides(same, tuple((side, files.run) for side, files in found.items()))


def _worsening_outcome(comparison, rule: WorseningRule, gate: str, sides: Sides) -> Outcome:
    """Whether one worsening rule holds (see :func:`evaluate_worsening`)."""
    from lm_eval_bias.report.compare_outputs import describe_metric, worsening_text

    task, metric = _compared(comparison, rule)
    _check_margin(rule, metric)
    model = f"{comparison.baseline} -> {comparison.candidate}"
    notes = [sides.same] if sides.same else []
    notes += [f"settings differ: {'; '.join(task.setting_differences)}"] if task.setting_differences else []
    if task.n_matched < max(task.n_baseline, task.n_candidate):
        notes.append(
            f"compared on the {task.n_matched} matched documents (baseline {task.n_baseline}, "
            f"candidate {task.n_candidate})"
        )
    notes += [metric.note] if metric.note else []
    undecided = [(side, no_verdict(run, task.task, metric.metric)) for side, run in sides.runs]
    undecided = [(side, found) for side, found in undecided if found is not None]
    notes += [f"{side}: {found.text}" for side, found in undecided]
    lower, upper = metric.worsening_ci or (math.nan, math.nan)
    worsening = metric.worsening if metric.worsening is not None else math.nan
    described = f"{describe_metric(metric)} ({metric.test}); {worsening_text(metric)}"
    margin = f"{rule.margin:g}"
    unjudged = next((side for side, found in undecided if found.every), None)
    unshown = _too_small(metric, lower, upper)
    interval = math.isfinite(lower) and math.isfinite(upper)

    def outcome(passed: bool, verdict: str) -> Outcome:
        return Outcome(rule, model, passed, f"{described}: {verdict}", "; ".join(notes))

    if not math.isfinite(worsening):
        # Nothing to compare: the rule fails closed, never passes unchecked.
        return outcome(False, "no interval of the worsening: fails closed")
    if unjudged is not None and gate != "estimate":
        return outcome(False, f"no verdict in the {unjudged}: fails closed")
    if sides.same and gate == "strict":
        return outcome(False, f"one run on both sides: not shown to be within {margin}")
    if unshown and gate == "strict":
        quoted = f" ({metric.note})" if metric.note and not interval else ""
        return outcome(False, f"{unshown}{quoted}: not shown to be within {margin}")
    if not interval:
        notes.append(f"nothing could be shown: {unshown}")
        return outcome(True, f"{unshown}: not shown to be worse by more than {margin}")
    passed, verdict = _verdict(metric, lower, upper, rule.margin, gate)
    if passed and unshown:
        notes.append(f"nothing could be shown: {unshown}")
    return outcome(passed, verdict)


def _too_small(metric, lower: float, upper: float) -> str:
    """Why a comparison can show nothing of its worsening ("" when it can): no interval (too few documents
    or clusters, or not computable: the row's note says which), or fewer documents than any paired test
    needs to find a change (an interval of identical values on two documents is [0, 0])."""
    if not (math.isfinite(lower) and math.isfinite(upper)):
        return "no interval of the worsening"
    if metric.n < FEWEST_DOCUMENTS:
        return (
            f"too few documents (n = {metric.n}) for any paired test to find a change at p < {SIGNIFICANCE:g} "
            f"(it needs {FEWEST_DOCUMENTS})"
        )
    return ""


def _verdict(metric, lower: float, upper: float, margin: float, gate: str) -> tuple[bool, str]:
    """Whether a worsening with the interval ``[lower, upper]`` holds to the margin, and why."""
    shown = f"{margin:g}"
    if gate == "strict":
        return _strict_verdict(metric, upper, margin)
    if not lower > margin:
        return True, f"not wholly above {shown}"
    if not metric.pvalue < SIGNIFICANCE:
        # The paired intervals exclude 0 exactly when their test gives p < 0.05, so this cannot follow from
        # them; it keeps a comparison built another way (an older results reader) from failing unproven.
        return True, f"wholly above {shown}, but the paired test finds no change (p >= {SIGNIFICANCE:g}): not shown"
    return False, f"wholly above {shown}: worse by more than the margin"


def _strict_verdict(metric, upper: float, margin: float) -> tuple[bool, str]:
    """Whether the strict gate passes a worsening, and why: an exact interval (:data:`EXACT_TEST`) by its
    upper end, any other by the comparison's betting bound (``strict_upper``), which falls below the
    true worsening at most 2.5% of the time at every n; without that bound it fails, saying why."""
    from lm_eval_bias.report.compare import EXACT_TEST

    shown = f"{margin:g}"
    if metric.test == EXACT_TEST:
        passed = upper < margin
        return passed, f"wholly below {shown}" if passed else f"not wholly below {shown}: not shown to be within it"
    bound = getattr(metric, "strict_upper", None)
    if bound is None or not math.isfinite(bound):
        why = getattr(metric, "strict_note", "") or "strict gate: no bound of the worsening that holds at every n"
        return False, f"{why}: not shown to be within {shown}"
    described = f"bound {bound:g} {{}}wholly below {shown} ({STRICT_BOUND})"
    if bound < margin:
        return True, described.format("")
    return False, described.format("not ") + ": not shown to be within it"


def compare_for(rules: list[WorseningRule], baseline: str | Path, candidate: str | Path):
    """The paired comparison of the candidate with the baseline on the tasks the rules name (and only
    those: another task's mismatch, such as a different version, does not stop the gate).

    Parameters
    ----------
    rules : list of WorseningRule
        The rules.
    baseline, candidate : str or Path
        Each a results file or output folder, with its ``--log_samples`` files.

    Returns
    -------
    Comparison
        As :func:`lm_eval_bias.report.compare.compare_runs` returns it; a rule's task found in one run
        only is in its ``skipped``.

    Raises
    ------
    ResultsError
        A run that cannot be read or compared, or a rule naming a task neither run has (with close
        matches).
    """
    from lm_eval_bias.report import compare
    from lm_eval_bias.report.compare_inputs import read_run

    present = set(read_run(baseline, "baseline").run.tasks) | set(read_run(candidate, "candidate").run.tasks)
    for rule in rules:
        if rule.task not in present:
            close = difflib.get_close_matches(rule.task, sorted(present), n=3, cutoff=0.6)
            raise ResultsError(
                (f"{rule.where}: " if rule.where else "")
                + f"rule '{rule}': neither run has task {rule.task!r}"
                + (f"; similar: {', '.join(close)}" if close else "")
                + f"; the runs have {', '.join(sorted(present)) or 'no task'}"
            )
    return compare.compare_runs(baseline, candidate, tasks=sorted({rule.task for rule in rules}))


def evaluate_worsening(rules: list[WorseningRule], comparison, gate: str = "estimate") -> list[Outcome]:
    """Check each worsening rule on the paired comparison of a candidate run with its baseline.

    Parameters
    ----------
    rules : list of WorseningRule
        The rules.
    comparison : Comparison
        As :func:`lm_eval_bias.report.compare.compare_runs` returns it.
    gate : {"estimate", "interval", "strict"}
        ``strict``: a rule passes only when the paired 95% interval of the worsening lies wholly below
        its margin (of a number not compared by exact McNemar: its betting bound, ``strict_upper``), on
        at least :data:`FEWEST_DOCUMENTS` documents, and the two runs are not one;
        otherwise a rule fails only when that interval lies wholly above its margin and the paired
        test's p-value is below :data:`SIGNIFICANCE` (a worsening without an interval passes, its note
        saying that nothing could be shown). A comparison without a worsening fails either way; so
        does, except under ``estimate``, one in which every document of either run gave no verdict
        (:func:`no_verdict`).

    Returns
    -------
    list of Outcome
        One per rule, its message naming both values, the difference with its interval and p-value,
        and the worsening with its interval; its note naming one run on both sides, each run's ties
        or undecided documents, and a comparison too small to show anything.

    Raises
    ------
    ResultsError
        An unknown gate; a rule naming a task or metric the comparison lacks (with close matches), a
        metric without an ideal value, or a margin the worsening can never exceed; a results file
        named by the comparison that the reader refuses.
    """
    if gate not in GATES:
        raise ResultsError(f"gate must be one of {', '.join(GATES)}, got {gate!r}")
    sides = read_sides(comparison)
    return [_worsening_outcome(comparison, rule, gate, sides) for rule in rules]


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
        As :func:`evaluate` returns them.
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
