"""Documents that gave no verdict (ties, undecided answers) behind a run's number.

Ties and undecided documents (the shares each task's metadata names in ``no_verdict``) are said in
the note of every outcome of ``check`` on a number they bear on, with how the number treats them (one
rule for every task: tasks/README.md, "Ties and undecided answers"). A number on which every document
gave no verdict is no verdict: its rule fails under the ``interval`` and ``strict`` gates and is
flagged in its note ("every pair tied ...: no verdict") under ``estimate``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lm_eval_bias import task_metadata
from lm_eval_bias.metric_keys import metric_range
from lm_eval_bias.report.run import Run


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
