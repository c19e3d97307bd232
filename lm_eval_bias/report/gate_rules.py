"""The rules of the ``check`` gate and the policy file that gives them.

A rule is ``TASK[:METRIC] OP VALUE`` with OP one of ``<=``, ``>=``, ``<``, ``>`` (``--max TASK=V`` is
``TASK <= V``, ``--min TASK=V`` is ``TASK >= V``); a worsening rule is ``TASK[:METRIC]=MARGIN``
(``--max-worsening``, or a policy's ``max_worsening:`` mapping). A policy file (YAML) holds either
kind and optionally the gate (:data:`GATES`). A limit a metric can never reach on one side, or a
margin its worsening can never exceed, is refused (:func:`refuse_unreachable`): a rule that can never
fail or never pass is a typo rather than a gate.

What checking a rule gives is an :class:`Outcome`: :mod:`.threshold_gate` checks rules on runs,
:mod:`.worsening_gate` worsening rules on a comparison of two runs.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from lm_eval_bias.metric_keys import range_text
from lm_eval_bias.readers import loads_yaml
from lm_eval_bias.report.outputs import text_line
from lm_eval_bias.report.results import read_text
from lm_eval_bias.report.values import ResultsError

GATES = ("estimate", "interval", "strict")
POLICY_KEYS = frozenset({"gate", "max_worsening", "rules"})
_RULE = re.compile(r"^\s*(?P<task>[\w.-]+)(?::(?P<metric>[\w.,-]+))?\s*(?P<op><=|>=|<|>|=)\s*(?P<value>\S+)\s*$")
_WORSENING_RULE = re.compile(r"^\s*(?P<task>[\w.-]+)(?::(?P<metric>[\w.,-]+))?\s*=\s*(?P<value>\S+)\s*$")


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
        raise ResultsError(f"cannot read the rule {text!r}; write TASK[:METRIC] OP VALUE, e.g. my_task:bias_score<=65")
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
            f"cannot read the worsening rule {text!r}; write TASK[:METRIC]=MARGIN, e.g. my_task:bias_score=2"
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
        raise ResultsError(f"{path}: 'rules' must be a list of rules, e.g. - my_task:bias_score <= 65")
    if not isinstance(policy.get("max_worsening", {}), dict):
        raise ResultsError(f"{path}: 'max_worsening' must be a mapping of TASK[:METRIC] to a margin, e.g. my_task: 2")
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
        raise ResultsError(f"{where}: write TASK[:METRIC]: MARGIN, e.g. my_task:bias_score: 2")
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
            'structure; write the rule as text, e.g. - "my_task:bias_score <= 65"'
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


def refuse_unreachable(rule: Rule | WorseningRule, op: str, limit: float, what: str, bounds) -> None:
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
