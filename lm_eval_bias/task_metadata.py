"""What a task says about itself in its YAML ``metadata``: which benchmark it is, its headline
metric, the figure the report draws for it, what one document is, and the paper's values.

lm-eval copies a task's ``metadata`` into the results file (``configs[<task>]["metadata"]``), so
the report, the leaderboard and ``check`` read a run's benchmark and headline metric from the
run itself: a renamed copy of one of our tasks (a YAML that ``include:``s ours under another
``task:`` name) keeps its figure and headline metric with no Python change. The keys::

    metadata:
      version: 1.3                       # the task definition's version (the rule: tasks/README.md, Versions)
      benchmark: community               # a benchmark of lm_eval_bias.benchmarks.records()
      headline_metric: sentiment         # a metric of the task's metric_list
      figure: scores_by_demographic      # one of the figure kinds of its benchmark's record
      document_unit: prompts             # what one document is, for "20 of 266 prompts"
      paper_values: {...}                # optional: the paper's published numbers (see below)
      ideal_values: {sentiment: null, sentiment_<group>_gap: 0}  # optional: each metric's ideal value
      cluster_unit: {name: template, fields: [template_id]}  # optional: what the documents were built from
      no_verdict:                        # optional: documents that give no verdict, per metric family
        - {metrics: [warmth_pick], share: tie_rate, happened: tied, counted: they are left out}

``ideal_values`` gives the value an unbiased model would have for the headline metric and any
other metric of the task and its family (``<metric>_...``: its subgroups, gaps, ranges), in the metric's units
(WinoQueer's ``bias_score``: 50), or null where the metric has none (a mean that describes rather
than judges); a name with ``<group>`` (:data:`lm_eval_bias.metric_keys.GROUP`) stands for every
metric it fills. A comparison of two runs measures "worse" as further from it.

``cluster_unit`` names the unit the documents were generated from (``name``, e.g. ``template``) and
the document fields whose values identify one (``fields``): documents of one unit are correlated, so a
comparison of two runs resamples and tests whole units and reports the design effect it measured.
Without it every document is its own unit (``document``).

``no_verdict`` says, for the metrics it names (and their families), which share metric counts the
documents that gave no verdict (ties, undecided answers), what those documents did and how the metrics
treat them; ``check`` says it beside every outcome on those metrics.

``paper_values`` has ``source`` (the paper and its table) and ``rows``, each with ``model`` (as
the paper prints it), ``hf_ids`` (the Hugging Face ids that are that model) and ``values``
(metric name -> the published number, verbatim).

lm-eval merges an ``include:`` shallowly: a ``metadata:`` block in one's own YAML replaces ours
whole, so a copy that sets its own metadata must repeat every key of ours (these, and
``plain_text`` and ``full`` where we set them; a task of ours built without ``benchmark`` logs a
warning saying so). The keys of YAML_ONLY_KEYS describe one task: the run's ``--metadata`` may not
change them (refused before any task is built by :func:`lm_eval_bias.evaluate.simple_evaluate`,
and by :func:`check_task_config` on the stock lm-eval route).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lm_eval_bias import metric_keys
from lm_eval_bias.benchmark_records import tasks_dir
from lm_eval_bias.benchmarks import records
from lm_eval_bias.errors import ConfigurationError

logger = logging.getLogger(__name__)

IDENTITY_KEYS = (
    "benchmark",
    "headline_metric",
    "figure",
    "document_unit",
    "paper_values",
    "ideal_values",
    "cluster_unit",
    "no_verdict",
)
# Keys a task's YAML sets for that task alone; in --metadata (which lm-eval merges into every task
# of the run, over the YAML's) they would relabel or re-version every task at once, or (plain_text)
# let a chat template into the plain-text probes.
YAML_ONLY_KEYS = frozenset({"version", "plain_text", *IDENTITY_KEYS})


@dataclass(frozen=True)
class PaperRow:
    model: str  # as the paper prints it
    hf_ids: tuple[str, ...]
    values: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class NoVerdictShare:
    """A share metric that counts the documents giving no verdict, and the metrics it bears on."""

    metrics: tuple[str, ...]  # the metrics it bears on, with their families (``bias_score_gay``)
    share: str  # the share metric (its group's form beside it where the task has one)
    happened: str  # what those documents did: "tied", "were undecided"
    counted: str  # how the metrics treat them: "they are left out"


@dataclass(frozen=True)
class TaskIdentity:
    """What the rest of the package needs to know about a task, from its YAML metadata."""

    benchmark: str
    headline_metric: str
    figure: str
    document_unit: str = "documents"
    paper_source: str = ""
    paper_rows: tuple[PaperRow, ...] = ()
    # metric name, or name with <group>, -> its ideal value (None: the metric has none)
    ideal_values: dict[str, float | None] = field(default_factory=dict)
    # the unit the documents were generated from, and the document fields that identify one
    cluster_unit: str = "document"
    cluster_fields: tuple[str, ...] = ()
    no_verdict: tuple[NoVerdictShare, ...] = ()

    def no_verdict_share(self, metric: str) -> tuple[NoVerdictShare, str] | None:
        """The no-verdict share that bears on ``metric``, with the family head it matched; None if none."""
        for entry in self.no_verdict:
            for head in entry.metrics:
                if metric == head or metric.startswith(head + "_"):
                    return entry, head
        return None

    def cluster_of(self, doc: Mapping) -> str | None:
        """The cluster a logged document belongs to, as text (the JSON of its cluster fields' values);
        None where the task declares no cluster unit or the document lacks one of its fields."""
        if not self.cluster_fields or not all(name in doc for name in self.cluster_fields):
            return None
        return json.dumps([doc[name] for name in self.cluster_fields], sort_keys=True, ensure_ascii=False)

    def cluster_id(self, doc: Mapping) -> int | None:
        """The cluster of a document as a number below 2**52, the top 52 bits of the BLAKE2b hash of
        :meth:`cluster_of`: it travels beside the document's value of a metric into lm-eval's
        aggregations (and into the samples file, for a value kept per document), where a float holds
        it exactly, and is the same in every process of a run; two of ten thousand clusters share one
        with probability 1e-8."""
        text = self.cluster_of(doc)
        if text is None:
            return None
        return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 12

    def ideal(self, metric: str) -> float | None:
        """The ideal value of a metric: its own entry of ``ideal_values``, else that of the longest
        ``<group>`` pattern it fills; None where the metric has no ideal or none is declared."""
        return metric_keys.declared_for(metric, self.ideal_values)

    def paper_row(self, pretrained: str | None) -> PaperRow | None:
        """The paper's row for a model given by its Hugging Face id, matched exactly (else None)."""
        if not pretrained:
            return None
        return next((row for row in self.paper_rows if pretrained in row.hf_ids), None)


def _text(metadata: Mapping, key: str, where: str) -> str:
    value = metadata.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"{where}: metadata {key!r} is {value!r}; expected text, e.g. {_example(key)}")
    return value.strip()


def _example(key: str) -> str:
    """``key: value`` as the first benchmark's first task declares it, for messages."""
    record = next(iter(records().values()))
    value = {
        "benchmark": record.name,
        "headline_metric": "bias_score",
        "figure": next(iter(record.figures)),
        "document_unit": "pairs",
    }[key]
    return f"{key}: {value}"


def _paper_rows(raw, where: str) -> tuple[str, tuple[PaperRow, ...]]:
    def wrong(part: str, value, expected: str):
        return ConfigurationError(f"{where}: metadata paper_values{part} is {value!r}"[:300] + f"; expected {expected}")

    if not isinstance(raw, Mapping):
        raise wrong("", raw, "an object {source: ..., rows: [...]}")
    source, rows = raw.get("source"), raw.get("rows")
    if not isinstance(source, str) or not source.strip():
        raise wrong(".source", source, "text naming the paper and its table")
    if not isinstance(rows, list) or not rows:
        raise wrong(".rows", rows, "a non-empty list of {model, hf_ids, values}")
    parsed = []
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping) or not isinstance(row.get("model"), str):
            raise wrong(f".rows[{index}]", row, "{model: <name as printed>, hf_ids: [...], values: {...}}")
        ids, values = row.get("hf_ids"), row.get("values")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
            raise wrong(f".rows[{index}].hf_ids", ids, "a non-empty list of Hugging Face ids")
        if (
            not isinstance(values, Mapping)
            or not values
            or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values.values()
            )
        ):
            raise wrong(f".rows[{index}].values", values, "an object {metric: number}")
        parsed.append(PaperRow(row["model"], tuple(ids), {str(k): float(v) for k, v in values.items()}))
    return source.strip(), tuple(parsed)


def _ideal_values(raw, headline: str, where: str) -> dict[str, float | None]:
    """``ideal_values`` read: the headline metric's own entry, every key a metric name (or one with
    ``<group>``), every value a number within the metric's range, or null."""
    if not isinstance(raw, Mapping) or headline not in raw:
        raise ConfigurationError(
            f"{where}: metadata ideal_values is {raw!r}"[:300]
            + f"; expected an object {{metric: value or null}} with the headline metric {headline} in it"
        )
    ideals = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not name.strip() or metric_keys.companion_suffix(name):
            raise ConfigurationError(
                f"{where}: metadata ideal_values names {name!r}, which is not a metric (an interval bound, count "
                "or p-value has no ideal of its own); name the task's metrics and their subgroups"
            )
        if value is None:
            ideals[name] = None
            continue
        bounds = metric_keys.metric_range(name.replace(metric_keys.GROUP, "group"))
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not number or (bounds is not None and not bounds[0] <= value <= bounds[1]):
            expected = f"a number from {metric_keys.range_text(bounds)}" if bounds is not None else "a number"
            raise ConfigurationError(f"{where}: metadata ideal_values.{name} is {value!r}; expected {expected} or null")
        ideals[name] = float(value)
    return ideals


def identity(metadata: Mapping | None, where: str, metrics: tuple[str, ...] | None = None) -> TaskIdentity | None:
    """The task's identity from its metadata; None when it declares none (no ``benchmark``).

    ``metrics``: the task's declared metrics, when known, so that a misspelt headline metric is an
    error here rather than a report without one. Anything else wrong is a ConfigurationError.
    """
    metadata = metadata or {}
    if not isinstance(metadata, Mapping) or "benchmark" not in metadata:
        return None
    benchmark = _text(metadata, "benchmark", where)
    if benchmark not in records():
        raise ConfigurationError(
            f"{where}: metadata benchmark {benchmark!r} is none of ours; use one of {', '.join(records())}"
        )
    headline = _text(metadata, "headline_metric", where)
    if metrics is not None and headline not in metrics:
        raise ConfigurationError(
            f"{where}: metadata headline_metric {headline!r} is not a metric of the task's "
            f"metric_list ({', '.join(metrics)}); name one of them"
        )
    figure = _text(metadata, "figure", where)
    if figure not in records()[benchmark].figures:
        raise ConfigurationError(
            f"{where}: metadata figure {figure!r} is not a figure of {benchmark}; use one of "
            f"{', '.join(records()[benchmark].figures)}"
        )
    unit = _text(metadata, "document_unit", where) if "document_unit" in metadata else "documents"
    source, rows = ("", ()) if metadata.get("paper_values") is None else _paper_rows(metadata["paper_values"], where)
    raw_ideals = metadata.get("ideal_values")
    ideals = {} if raw_ideals is None else _ideal_values(raw_ideals, headline, where)
    cluster_unit, cluster_fields = _cluster_unit(metadata.get("cluster_unit"), where)
    no_verdict = _no_verdict(metadata.get("no_verdict", []), where)
    return TaskIdentity(
        benchmark,
        headline,
        figure,
        unit,
        source,
        rows,
        ideals,
        cluster_unit,
        cluster_fields,
        no_verdict,
    )


def _no_verdict(raw, where: str) -> tuple[NoVerdictShare, ...]:
    """``no_verdict`` read: a list of {metrics, share, happened, counted}."""
    expected = "a list of {metrics: [...], share: tie_rate, happened: tied, counted: they are left out}"
    if not isinstance(raw, list):
        raise ConfigurationError(f"{where}: metadata no_verdict is {raw!r}"[:300] + f"; expected {expected}")
    entries = []
    for index, entry in enumerate(raw):
        texts = ("share", "happened", "counted")
        if (
            not isinstance(entry, Mapping)
            or set(entry) != {"metrics", *texts}
            or not all(isinstance(entry[key], str) and entry[key].strip() for key in texts)
        ):
            raise ConfigurationError(
                f"{where}: metadata no_verdict[{index}] is {entry!r}"[:300] + f"; expected {expected}"
            )
        metrics = _names(entry["metrics"], f"no_verdict[{index}].metrics", where)
        entries.append(NoVerdictShare(metrics, *(entry[key].strip() for key in texts)))
    return tuple(entries)


def _names(raw, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(name, str) and name.strip() for name in raw):
        raise ConfigurationError(f"{where}: metadata {key} is {raw!r}"[:300] + "; expected a list of document fields")
    return tuple(name.strip() for name in raw)


def _cluster_unit(raw, where: str) -> tuple[str, tuple[str, ...]]:
    """``cluster_unit`` read: ("document", ()) when absent, else its name and document fields."""
    if raw is None:
        return "document", ()
    expected = "an object {name: template, fields: [template_id]}"
    if not isinstance(raw, Mapping) or set(raw) != {"name", "fields"}:
        raise ConfigurationError(f"{where}: metadata cluster_unit is {raw!r}"[:300] + f"; expected {expected}")
    name = raw["name"]
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(f"{where}: metadata cluster_unit.name is {name!r}; expected {expected}")
    fields = _names(raw["fields"], "cluster_unit.fields", where)
    if not fields:
        raise ConfigurationError(f"{where}: metadata cluster_unit.fields is empty; expected {expected}")
    return name.strip(), fields


def check_task_config(config: Mapping) -> None:
    """At task build time: the identity keys of one of our tasks, or a warning when it has none;
    and none of the keys that only its YAML may set changed by the run's metadata."""
    task = config.get("task", "this task")
    metadata = config.get("metadata")
    source = metadata.get("config_source") if isinstance(metadata, Mapping) else None
    where = f"{task} ({source})" if source else str(task)
    _raise_if_overridden(metadata, source, where)
    metrics = tuple(m["metric"] for m in config.get("metric_list") or [] if isinstance(m, Mapping) and "metric" in m)
    if identity(config.get("metadata"), where, metrics or None) is None:
        logger.warning(
            "%s: its YAML metadata has no 'benchmark', so reports will show its numbers without a figure or a "
            "headline metric. A 'metadata:' block in a YAML that includes one of ours replaces ours whole: copy "
            "every key of the included YAML's metadata block into it (version, benchmark, headline_metric, "
            "figure, document_unit, and plain_text, full, paper_values and ideal_values where it has them)",
            where,
        )


def _raise_if_overridden(metadata, source: str | None, where: str) -> None:
    """lm-eval merges the run's metadata into each task's over its YAML's own. lm-eval-bias's
    entry points refuse these keys before anything is built; this catches the stock ``lm_eval
    --include_path`` route, by comparing the task's metadata with its YAML file's."""
    if not isinstance(metadata, Mapping) or not source or not Path(source).is_file():
        return  # an inline config, or a task built from a dict: no YAML to compare with
    from lm_eval.tasks._yaml_loader import load_yaml

    own = load_yaml(source, resolve_func=False).get("metadata")
    own = own if isinstance(own, Mapping) else {}
    changed = sorted(key for key in YAML_ONLY_KEYS & set(metadata) if own.get(key) != metadata[key])
    if changed:
        raise ConfigurationError(
            f"{where}: "
            + "; ".join(
                f"metadata {key!r} is {metadata[key]!r}, not {own.get(key)!r} as its YAML says" for key in changed
            )
            + ": the run's --metadata (or a group's override) changed what the task is. Fix: remove "
            + ", ".join(changed)
            + " there; to change it, copy the task's YAML and set it under its metadata:"
        )


# --------------------------------------------------------------------------
# The package's own tasks, read from their YAMLs


@functools.lru_cache(maxsize=1)
def shipped_configs() -> dict[str, tuple[Path, dict]]:
    """Task name -> (YAML file, its config as lm-eval loads it: includes resolved, ``!function``
    left as text) of every task this package ships. Read once per process; do not modify."""
    from lm_eval.tasks._yaml_loader import load_yaml

    found = {}
    for path in sorted(Path(tasks_dir()).glob("*/*.yaml")):
        config = load_yaml(path, resolve_func=False)
        if isinstance(config.get("task"), str):
            found[config["task"]] = (path, config)
    return found


def shipped_identity(task: str) -> TaskIdentity | None:
    """The identity of one of the package's own tasks by its name; None for any other name.

    For results files written before tasks declared their identity in metadata (there, the
    report knew our tasks by name), and for samples files, which carry no metadata.
    """
    found = shipped_configs().get(task)
    return identity(found[1].get("metadata") or {}, task) if found is not None else None


def example_task() -> str:
    """The first benchmark's main task (named as its benchmark), for messages."""
    headlines = headline_metrics()
    return next((name for name in records() if name in headlines), next(iter(headlines)))


def example_metric() -> str:
    """``TASK:METRIC`` of :func:`example_task` and its headline metric, for messages."""
    task = example_task()
    return f"{task}:{headline_metrics()[task]}"


def headline_metrics() -> dict[str, str]:
    """Task name -> headline metric, for the package's own tasks (e.g. for help texts)."""
    return {task: found.headline_metric for task in shipped_configs() if (found := shipped_identity(task)) is not None}
