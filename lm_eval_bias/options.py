"""Task options (the ``--metadata`` keys a benchmark reads): declared once, checked early.

lm-eval hands every task's dataset loader the task's YAML ``metadata``, the run's
``--metadata`` and, with its own CLI, the ``--model_args`` too, all in one dict.
Each benchmark declares the options it reads (:class:`Option`, with a parser
that checks the value's type) on its loader with :func:`takes`; then

* :func:`parse` turns a loader's keyword arguments into checked values, and
  reports every bad value at once (what, which option, the fix);
* :func:`misspelt` finds keys that look like one of our options but are none
  (``data_fil``, ``subgroup``, ``scm_group``): a misspelt option is an error,
  never silently ignored. Keys that look like nothing of ours may be model
  arguments or another harness task's options, so a task cannot reject them;
  ``lm-eval-bias``, which sees ``--metadata`` apart from ``--model_args``,
  rejects those too (:func:`unknown_keys`);
* :func:`yaml_only` finds keys that only a task's YAML may set (``version``, ``benchmark``...).

Where each rule runs, once per phase: :func:`run_metadata_problems` when
:func:`lm_eval_bias.task_manager` is made; :func:`yaml_only` before any task is built and
:func:`unknown_keys` after, in :func:`lm_eval_bias.evaluate.simple_evaluate` (for a task manager
made elsewhere, e.g. by lm-eval's CLI); :func:`misspelt` and :func:`parse` as each of our tasks
is built (``harness.check_options``), which is all the stock ``lm_eval`` route has (there
``task_metadata.check_task_config`` compares the task-only keys with the task's YAML).
"""

from __future__ import annotations

import difflib
import functools
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lm_eval_bias.errors import ConfigurationError
from lm_eval_bias.task_metadata import IDENTITY_KEYS, YAML_ONLY_KEYS

# Keys lm-eval itself puts into every task's metadata, and our YAMLs' own (not options): the task's
# identity (task_metadata.IDENTITY_KEYS) among them.
LM_EVAL_KEYS = frozenset({"version", "config_source", "plain_text", *IDENTITY_KEYS})
# The text classifiers' option prefix; each benchmark's own are in its record (``option_prefixes``).
SCORER_PREFIXES = ("detoxify_",)
# How alike (difflib ratio) a key must be to one of our options to be called a misspelling of it.
MISSPELLING_CUTOFF = 0.8


# --------------------------------------------------------------------------
# Value parsers: value -> checked value, or ValueError saying what was expected


def _describe(value: Any) -> str:
    kind = {bool: "a boolean", int: "a number", float: "a number", str: "text", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )
    return f"{value!r} ({kind})"


def path(value: Any) -> str:
    """A file or folder path: text (or a path object), not empty."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a path (text), got {_describe(value)}")
    return value.strip()


def text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {_describe(value)}")
    return value


def names(value: Any) -> tuple[str, ...]:
    """A comma-separated string or a list of strings, at least one name."""
    if isinstance(value, str):
        items = [item.strip() for item in value.split(",")]
    elif isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        items = [item.strip() for item in value]
    else:
        raise ValueError(f"expected names, as text separated by commas or a list of texts, got {_describe(value)}")
    items = [item for item in items if item]
    if not items:
        raise ValueError("expected at least one name, got none")
    return tuple(items)


def integer(value: Any, minimum: int | None = None) -> int:
    """A whole number (or text holding one); booleans and fractions are refused."""
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {_describe(value)}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise ValueError(f"expected a whole number, got {_describe(value)}") from None
    if not isinstance(value, int):
        raise ValueError(f"expected a whole number, got {_describe(value)}")
    if minimum is not None and value < minimum:
        raise ValueError(f"expected a whole number of at least {minimum}, got {value}")
    return value


def count(value: Any) -> int:
    """A whole number of at least 1 (a count that must leave something to evaluate)."""
    return integer(value, minimum=1)


def number(value: Any, positive: bool = False) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {_describe(value)}")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f"expected a number, got {_describe(value)}") from None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {_describe(value)}")
    if positive and value <= 0:
        raise ValueError(f"expected a positive number, got {value}")
    return float(value)


def positive_number(value: Any) -> float:
    return number(value, positive=True)


_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


def flag(value: Any) -> bool:
    """true/false (or text or 0/1 saying so): "false" is False, not a non-empty string."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"expected true or false, got {_describe(value)}")


def choice(*allowed: str) -> Callable[[Any], str]:
    def parse_choice(value: Any) -> str:
        if not isinstance(value, str) or value.strip() not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {_describe(value)}")
        return value.strip()

    parse_choice.__doc__ = f"One of {', '.join(allowed)}."
    return parse_choice


def anything(value: Any) -> Any:
    """Left to the benchmark to check (e.g. nested structures with their own messages)."""
    return value


# --------------------------------------------------------------------------
# Declarations


# What an option does to a run, for the results file's provenance (``takes``).
SELECTION = "selection"  # keeps some of the documents: a run with it is partial
SETTING = "setting"  # changes the documents or how they are scored: recorded when not the default
SOURCE = "source"  # where the data or a classifier comes from: recorded by the file's own provenance
TASK = "task"  # set by a task's YAML (the *_full variants): part of the task's definition


@dataclass(frozen=True)
class Option:
    """One ``--metadata`` key: its name, how its value is checked, what it does, its default,
    and its role in the results file's provenance (:data:`SELECTION`, :data:`SETTING`, ...)."""

    name: str
    parse: Callable[[Any], Any]
    help: str
    default: Any = None
    role: str = SETTING


# Shared by several benchmarks: declared here once.
DATA_FILE = Option("data_file", path, "the benchmark's data file in the official format", role=SOURCE)
DATA_DIR = Option("data_dir", path, "a folder laid out as DIR/<benchmark>/<official file name>", role=SOURCE)
SEED = Option("seed", integer, "seed of the default sample", 1234)
FULL = Option(
    "full", flag, "run every prompt instead of the default sample (the *_full tasks set it)", False, role=TASK
)
DETOXIFY_OPTIONS = (
    Option("detoxify_model", text, "Detoxify model: original, unbiased, multilingual, ..."),
    Option("detoxify_checkpoint", path, "a local Detoxify .ckpt file (offline use)", role=SOURCE),
    Option("detoxify_config_dir", path, "a folder with the checkpoint's base-model config and tokenizer", role=SOURCE),
    Option("detoxify_dtype", choice("float32", "bfloat16"), "float32 (Detoxify's own) or bfloat16 autocast"),
)

_REGISTRY: dict[str, Option] = {}


def takes(*declared: Option):
    """Declare the options a ``custom_dataset`` loader reads.

    The decorated loader receives each declared option checked by :func:`parse`
    (its default when unset), plus ``metadata``: everything lm-eval passed (for
    error messages). Its declarations are kept on it as ``options`` so the task
    class can check the keys before loading. The options that narrow or change
    the documents go into the provenance the loader attached to its dataset
    (``lm_eval_bias_data``): ``selection`` (options that keep some documents)
    and ``settings`` (any other option not at its default), so a results file
    says what was run.
    """
    for option in declared:
        _REGISTRY.setdefault(option.name, option)

    def decorate(loader):
        @functools.wraps(loader)
        def load(**metadata):
            values = parse(metadata, declared)
            dataset = loader(**values, metadata=metadata)
            selection = chosen(declared, values, SELECTION)
            if "test" in dataset and len(dataset["test"]) == 0:
                named = ", ".join(f"{key}={value!r}" for key, value in selection.items()) or "the data"
                raise ConfigurationError(
                    f"{named} leaves no documents to evaluate; choose options that keep at least one"
                )
            provenance = getattr(dataset, "lm_eval_bias_data", None)
            if provenance is not None:
                provenance.setdefault("selection", {}).update(selection)
                provenance.setdefault("settings", {}).update(chosen(declared, values, SETTING))
            return dataset

        load.options = declared
        return load

    return decorate


def chosen(declared: Iterable[Option], values: Mapping[str, Any], role: str) -> dict[str, Any]:
    """The options of ``role`` whose value is not the default, as JSON-friendly values."""
    picked = {}
    for option in declared:
        value = values.get(option.name)
        if option.role == role and value is not None and value != option.default:
            picked[option.name] = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else value
    return picked


def parse(metadata: Mapping[str, Any], declared: Iterable[Option], where: str = "--metadata") -> dict[str, Any]:
    """Each declared option's checked value (its default when unset or None).

    Every bad value is reported at once in one :class:`ConfigurationError`.
    """
    values, problems = {}, []
    for option in declared:
        raw = metadata.get(option.name)
        if raw is None:
            values[option.name] = option.default
            continue
        try:
            values[option.name] = option.parse(raw)
        except ValueError as error:
            problems.append(f"{where} option {option.name!r}: {error} ({option.help})")
    if problems:
        raise ConfigurationError("\n".join(problems))
    return values


def known_names() -> frozenset[str]:
    """Every option any of our benchmarks reads (imports them all so that each declares its own)."""
    from lm_eval_bias import benchmarks

    benchmarks.import_all()
    return frozenset(_REGISTRY)


@functools.cache
def our_prefixes() -> tuple[str, ...]:
    """Prefixes only our options use (an unknown key with one of them is surely misspelt): the
    scorers' and every benchmark record's ``option_prefixes``."""
    from lm_eval_bias.benchmarks import records

    return SCORER_PREFIXES + tuple(prefix for record in records().values() for prefix in record.option_prefixes)


def _suggestion(key: str, names: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, sorted(names), n=1, cutoff=MISSPELLING_CUTOFF)
    return f" (did you mean {close[0]!r}?)" if close else ""


def misspelt(keys: Iterable[str], own: Iterable[str]) -> list[str]:
    """Problems for keys that look like one of our options but are none of them."""
    known = known_names() | set(own) | LM_EVAL_KEYS
    problems = []
    for key in keys:
        if key in known:
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=MISSPELLING_CUTOFF)
        if close or key.startswith(our_prefixes()):
            problems.append(f"unknown option {key!r}{_suggestion(key, known)}")
    return problems


def yaml_only(keys: Iterable[str]) -> list[str]:
    """Problems for keys that only a task's YAML may set: lm-eval merges ``--metadata`` into every
    task of the run over the YAML's own, so there they would relabel or re-version every task."""
    return [
        f"{key!r} is set by each task's YAML metadata (it says what the task is), not per run: it would "
        f"override every task's own {key}. Fix: remove it; to change it, copy the task's YAML and set "
        f"{key} under its metadata:"
        for key in keys
        if key in YAML_ONLY_KEYS
    ]


def unknown_keys(keys: Iterable[str]) -> list[str]:
    """Problems for the keys that are none of our options and look like none of them either (for
    ``--metadata`` alone, when every task of the run is ours): the ones that look like one are
    :func:`misspelt`, which each of our tasks reports as it is built."""
    known = known_names() | LM_EVAL_KEYS
    return [f"unknown option {key!r}" for key in keys if key not in known and not misspelt([key], ())]


def run_metadata_problems(keys: Iterable[str]) -> list[str]:
    """Problems of a run's metadata keys that need no task built: keys that only a task's YAML may
    set (:func:`yaml_only`) and misspelt options (:func:`misspelt`).

    Parameters
    ----------
    keys : iterable of str
        The metadata's keys, in the order the messages should name them.

    Returns
    -------
    list of str
        One problem per such key.
    """
    keys = list(keys)
    return yaml_only(keys) + misspelt(keys, ())


def listing(declared: Iterable[Option]) -> str:
    """``name (help)`` for each option, for messages."""
    return "; ".join(f"{option.name} ({option.help})" for option in declared)
