"""The ``lm-eval-bias`` command: lm-eval's own CLI with our tasks always indexed.

Everything lm-eval accepts works unchanged (``run``, ``ls``, ``validate``, the
legacy flag-only form, a user's own ``--include_path``), plus:

- ``lm-eval-bias tasks-dir``: print the task directory, for the stock CLI's
  ``--include_path``;
- ``lm-eval-bias download [--to DIR] [SOURCE ...]``: fetch the public data
  once, for air-gapped clusters;
- ``lm-eval-bias tango-agreement GEN.jsonl PROB.jsonl``: how often TANGO's
  generation and probability methods agree, from their ``--log_samples`` files;
- ``lm-eval-bias check RESULTS... --max winoqueer=65 ...``: exit 0/1 gate for CI;
- ``lm-eval-bias leaderboard RESULTS...``: models side by side (markdown, CSV, HTML);
- ``lm-eval-bias recompute SAMPLES.jsonl``: a task's results again from its
  ``--log_samples`` file, without the model;
- ``lm-eval-bias report RESULTS...``: an HTML (and Markdown) report with figures.

``lm-eval-bias --help`` lists these (with one line each) before lm-eval's own help; each
has its own ``--help``.

Every one of these subcommands reports bad input or configuration the same way:
one message, ``lm-eval-bias <subcommand>: <what, where, fix>``, on stderr and
exit code 2; ``check`` exits 1 when a rule fails; 0 otherwise (see
:mod:`lm_eval_bias.errors`). Output files are written whole or not at all.

``--use_cache PATH`` is keyed on the model, its arguments and its weights (see
:func:`cache_path_for_run`): lm-eval's cache key is the request alone, so one cache
shared by two models, or by one model before and after its weights changed (a
fine-tune saved into the same folder, a hub repository that moved on), would
silently return the first weights' log-likelihoods. A local folder is identified by
its files' names, sizes and modification times; a hub id by its commit (a pinned
``revision=<commit>``, else resolved on the hub, or from the local Hugging Face
cache's ``refs/`` when offline); ``peft=``, ``delta=``, ``tokenizer=`` and vLLM's
``lora_local_path=`` the same way. A hub id that can be neither pinned nor resolved
is refused. An API backend's weights cannot be identified: its cache is keyed by the
model name and arguments only, with a warning. The log names the path and the key.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import logging
import math
import os
import re
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lm_eval_bias import data, models, tasks_dir
from lm_eval_bias.errors import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_OK,
    ConfigurationError,
    LmEvalBiasError,
)

logger = logging.getLogger("lm_eval_bias")


def model_specific_cache_path(use_cache: str, model, model_args, weights_keys: Sequence[str] = ()) -> str:
    """The cache path of one model: ``use_cache`` extended with the model's readable name, a
    digest of model + model_args and, when the weights were identified, a digest of them.

    Parameters
    ----------
    use_cache:
        The path given to ``--use_cache`` (a folder, or a folder and a file name prefix).
    model, model_args:
        The backend's name and its arguments (a ``key=value,...`` string or a dict).
    weights_keys:
        What identifies the weights (see :func:`identify_weights`); empty when they cannot be.

    Returns
    -------
    str
        ``<use_cache>__<name>__<args digest>[__weights-<weights digest>]``; lm-eval appends
        ``_rank<N>.db``.
    """
    if isinstance(model_args, str):
        args_for_digest = model_args
        pretrained = re.search(r"(?:^|,)\s*pretrained=([^,]+)", model_args)
        pretrained = pretrained.group(1) if pretrained else ""
    else:
        args_for_digest = model_args or {}
        pretrained = str((model_args or {}).get("pretrained", ""))
    identity = json.dumps({"model": str(model), "model_args": args_for_digest}, sort_keys=True, default=str)
    digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(pretrained).name or str(model)).strip("_")
    suffix = f"{readable}__{digest}"
    if weights_keys:
        suffix += "__weights-" + hashlib.sha256("\n".join(weights_keys).encode()).hexdigest()[:12]
    path = Path(use_cache)
    if path.is_dir() or use_cache.endswith(("/", "\\")):
        return str(path / suffix)
    return str(path.parent / f"{path.name}__{suffix}")


# Model arguments whose value names weights or files that shape the model's log-likelihoods: the
# model itself, an adapter or delta on top of it (``hf``), a LoRA folder (``vllm``), a tokenizer.
WEIGHTS_ARGUMENTS = ("pretrained", "peft", "delta", "lora_local_path", "tokenizer")
_FULL_COMMIT = re.compile(r"[0-9a-f]{40}")
_TRUE_TEXTS = {"1", "on", "yes", "true"}


@dataclass(frozen=True)
class WeightsSource:
    """What one model argument names, as the cache key sees it.

    ``key`` enters the cache path's digest; ``how`` says in the log what identified it.
    """

    argument: str
    value: str
    key: str
    how: str


def identify_weights(model, model_args) -> list[WeightsSource]:
    """What identifies the weights a run will load, for the ``--use_cache`` key.

    A local folder is identified by the names, sizes and modification times of its files (hidden
    folders such as ``.git`` aside), a local file by its size and modification time, a Hugging
    Face hub id by its commit: a ``revision=`` that is a full commit hash is the key itself;
    otherwise the revision (``main`` by default) is resolved on the hub, or from the local
    Hugging Face cache's ``refs/`` when offline or when the hub cannot be reached.

    Parameters
    ----------
    model:
        The backend's name (``hf``, ``vllm``, ...) or a model object.
    model_args:
        The backend's arguments: a ``key=value,...`` string or a dict.

    Returns
    -------
    list[WeightsSource]
        One per weights argument given (:data:`WEIGHTS_ARGUMENTS`); empty when the backend takes
        none (an API backend: the weights behind its server cannot be identified).

    Raises
    ------
    ConfigurationError
        When the weights cannot be identified, so that a cache could return another version's
        log-likelihoods: a model object, or a hub id that is neither pinned nor resolvable.
    """
    if not isinstance(model, str):
        raise ConfigurationError(
            f"--use_cache: the model is an object ({type(model).__name__}), so which weights it holds cannot be "
            "identified and a cache could return the log-likelihoods of other weights. Fix: pass the model by "
            "name (model='hf', model_args={'pretrained': FOLDER}), or leave use_cache out"
        )
    arguments = _parsed_model_args(model_args)
    revision = arguments.get("revision")
    sources = []
    for argument in WEIGHTS_ARGUMENTS:
        value = arguments.get(argument)
        if value is None or value == "":
            continue
        if not isinstance(value, (str, os.PathLike)):
            raise ConfigurationError(
                f"--use_cache: {argument} is an object ({type(value).__name__}), so which weights it holds cannot "
                f"be identified and a cache could return the log-likelihoods of other weights. Fix: save it "
                f"(save_pretrained) and pass its folder as {argument}=FOLDER, or leave use_cache out"
            )
        own_revision = arguments.get("tokenizer_revision") if argument == "tokenizer" else None
        sources.append(_identify(argument, str(value), str(own_revision or revision or "main")))
    return sources


def _parsed_model_args(model_args) -> dict:
    """``model_args`` as lm-eval reads them: a dict, or a ``key=value,...`` string."""
    if isinstance(model_args, dict):
        return model_args
    if not model_args or not str(model_args).strip():
        return {}
    from lm_eval.utils import simple_parse_args_string

    return simple_parse_args_string(str(model_args))


def _identify(argument: str, value: str, revision: str) -> WeightsSource:
    """One weights argument: a local folder or file (as the loaders look first), else a hub id."""
    place = Path(value)
    if place.is_dir():
        files = _folder_listing(place)
        fingerprint = hashlib.sha256("\n".join(files).encode()).hexdigest()
        return WeightsSource(
            argument,
            value,
            f"{argument}=folder:{fingerprint}",
            f"the folder {place.resolve()} ({len(files)} file{'' if len(files) == 1 else 's'} by name, size and "
            f"modification time: {fingerprint[:12]})",
        )
    if place.is_file():
        stat = place.stat()
        return WeightsSource(
            argument,
            value,
            f"{argument}=file:{place.resolve()}\t{stat.st_size}\t{stat.st_mtime_ns}",
            f"the file {place.resolve()} (size {stat.st_size}, modified {stat.st_mtime_ns} ns)",
        )
    if not _is_hub_id(value):
        # Neither a folder, a file nor a hub id: the backend will not load it, so nothing is cached.
        return WeightsSource(argument, value, f"{argument}=missing:{value}", "not found here")
    commit, how = _hub_commit(argument, value, revision)
    return WeightsSource(argument, value, f"{argument}=hub:{value}@{commit}", f"commit {commit} ({how})")


def _folder_listing(folder: Path) -> list[str]:
    """``name<TAB>size<TAB>modification time`` of every file under ``folder``, hidden folders aside."""
    listing = []
    seen = set()
    for root, folders, names in os.walk(folder, followlinks=True):
        seen.add(os.path.realpath(root))
        # a link back to a folder above would be walked for ever
        folders[:] = sorted(
            name
            for name in folders
            if not name.startswith(".") and os.path.realpath(os.path.join(root, name)) not in seen
        )
        for name in sorted(names):
            path = Path(root) / name
            try:
                stat = path.stat()  # a link counts as the file it points to (Hugging Face snapshots)
            except OSError:
                continue  # a dangling link is no file the loader can read
            listing.append(f"{path.relative_to(folder).as_posix()}\t{stat.st_size}\t{stat.st_mtime_ns}")
    return listing


def _is_hub_id(value: str) -> bool:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError:
        return False
    return True


def _hub_offline() -> bool:
    """Whether the Hugging Face libraries are told to stay offline (read now, not at their import)."""
    offline = (os.environ.get(name, "").strip().lower() for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    return any(value in _TRUE_TEXTS for value in offline)


def hub_cache_dir() -> Path:
    """The local Hugging Face hub cache, as ``huggingface_hub`` finds it from the environment."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(name):
            return Path(os.environ[name]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    base = Path(os.environ["XDG_CACHE_HOME"]).expanduser() if os.environ.get("XDG_CACHE_HOME") else None
    return (base or Path.home() / ".cache") / "huggingface" / "hub"


def _cached_commit(repo_id: str, revision: str) -> tuple[str | None, Path]:
    """The commit the local Hugging Face cache's ``refs/<revision>`` names for ``repo_id``."""
    ref = hub_cache_dir() / ("models--" + repo_id.replace("/", "--")) / "refs" / revision
    try:
        commit = ref.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None, ref
    return (commit if _FULL_COMMIT.fullmatch(commit) else None), ref


def _hub_commit(argument: str, repo_id: str, revision: str) -> tuple[str, str]:
    """The commit behind ``repo_id`` at ``revision``, and how it was found."""
    if _FULL_COMMIT.fullmatch(revision):
        return revision, "pinned by revision="
    hub_error = None
    if not _hub_offline():
        try:
            from huggingface_hub import HfApi

            return HfApi().model_info(repo_id, revision=revision, timeout=10).sha, f"{revision} on the Hugging Face hub"
        except Exception as error:  # noqa: BLE001 - any failure falls back to what the loader would use
            hub_error = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:200]
    commit, ref = _cached_commit(repo_id, revision)
    if commit:
        why = "offline" if hub_error is None else f"the hub could not be asked: {hub_error}"
        return commit, f"{ref} in the local Hugging Face cache, {why}"
    asked = "the hub is offline (HF_HUB_OFFLINE)" if hub_error is None else f"the hub could not be asked ({hub_error})"
    raise ConfigurationError(
        f"--use_cache: cannot tell which weights {argument}={repo_id} names: it is no local folder, no "
        f"revision= pins a commit, {asked} and the local Hugging Face cache has no {ref}. A cache keyed by "
        f"the name alone could return another version's log-likelihoods. Fix: pin revision=<the full "
        f"40-character commit hash> in --model_args, or download the model once, or leave --use_cache out"
    )


def cache_path_for_run(use_cache: str, model, model_args) -> str:
    """The ``--use_cache`` path of this run, keyed on the model, its arguments and its weights.

    lm-eval's cache key is the request alone, so one cache shared by two models, or by a model
    before and after its weights changed, silently returns the first one's log-likelihoods. Used
    by the ``lm-eval-bias`` command and by :func:`lm_eval_bias.simple_evaluate`. The log says the
    path and what identified the weights; for a backend without weights arguments (an API
    server) it warns that the cache is keyed by the model name and arguments only.

    Parameters
    ----------
    use_cache:
        The path given to ``--use_cache``.
    model, model_args:
        As given to ``simple_evaluate``.

    Returns
    -------
    str
        The path to give lm-eval (see :func:`model_specific_cache_path`).

    Raises
    ------
    ConfigurationError
        When the weights cannot be identified (see :func:`identify_weights`).
    """
    weights = identify_weights(model, model_args)
    path = model_specific_cache_path(use_cache, model, model_args, [source.key for source in weights])
    if any(source.argument == "pretrained" for source in weights):
        logger.info(
            "--use_cache %s -> %s (keyed by the model, its arguments and its weights: %s)",
            use_cache,
            path,
            "; ".join(f"{source.argument}={source.value}: {source.how}" for source in weights),
        )
    else:
        logger.warning(
            "--use_cache %s -> %s is keyed by the model name and arguments only%s: the weights behind %s cannot "
            "be identified. After the served model changes, give --use_cache a new path",
            use_cache,
            path,
            "".join(f" and {source.argument}={source.value}: {source.how}" for source in weights),
            model,
        )
    return path


def unwritable_run_paths(kwargs: dict) -> list[str]:
    """Problems with ``simple_evaluate``'s ``use_cache`` and its tracker's output path: a folder
    that cannot be created or written (lm-eval would find out after the last request)."""
    tracker_output = getattr(kwargs.get("evaluation_tracker"), "output_path", None)
    problems = [
        _unwritable("--use_cache", Path(kwargs["use_cache"]).parent) if kwargs.get("use_cache") else None,
        _unwritable(
            "--output_path",
            Path(tracker_output) if not str(tracker_output).endswith(".json") else Path(tracker_output).parent,
        )
        if tracker_output
        else None,
    ]
    return [problem for problem in problems if problem]


def _install_task_manager_shim() -> None:
    """Make every TaskManager lm-eval's CLI builds index our tasks first.

    lm-eval 0.4.13 imports ``TaskManager`` from ``lm_eval.tasks`` lazily inside
    ``run``, ``ls`` and ``validate``, so replacing the attribute reaches all three.
    A user's ``--include_path`` is indexed after ours and wins on a name clash.
    """
    import lm_eval.tasks as lm_eval_tasks

    base = lm_eval_tasks.TaskManager
    if getattr(base, "_lm_eval_bias_shim", False):
        return
    ours = tasks_dir()

    class TaskManagerWithBiasTasks(base):
        _lm_eval_bias_shim = True

        def __init__(self, *args, include_path=None, **kwargs):
            if include_path is None:
                user_paths = []
            elif isinstance(include_path, (list, tuple)):
                user_paths = list(include_path)
            else:
                user_paths = [include_path]
            paths = [ours, *(p for p in user_paths if str(p) != ours)]
            super().__init__(*args, include_path=paths, **kwargs)

    lm_eval_tasks.TaskManager = TaskManagerWithBiasTasks


def _install_evaluate_shim() -> None:
    """Make the ``simple_evaluate`` that lm-eval's CLI calls ours: every task is built and
    checked before the model loads, and ``--use_cache`` is keyed on the model and its weights
    (``preflight.simple_evaluate``, which :func:`lm_eval_bias.simple_evaluate` uses too)."""
    import lm_eval

    from lm_eval_bias import preflight

    if getattr(lm_eval.__dict__.get("simple_evaluate"), "_lm_eval_bias_shim", False):
        return

    def simple_evaluate(*args, **kwargs):
        return preflight.simple_evaluate(*args, **kwargs)

    simple_evaluate._lm_eval_bias_shim = True
    lm_eval.simple_evaluate = simple_evaluate


def _unwritable(option: str, folder: Path) -> str | None:
    """Why ``folder`` cannot be created or written (lm-eval would find out only after every
    request: results lost, or a crash), or None."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        reason = f"{existing} is a file, not a folder"
    elif not os.access(existing, os.W_OK | os.X_OK):
        reason = f"{existing} is not writable"
    else:
        return None
    return f"{option}: cannot write under {folder}: {reason}. Fix: give a path in a writable folder"


class _ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors: a usage mistake is reported like every other bad input
    (``lm-eval-bias <command>: <message>``, exit code 2), not as argparse's usage block."""

    def error(self, message: str):
        raise ConfigurationError(f"{message}; see {self.prog} --help")


# Our own subcommands, by name, and the line ``lm-eval-bias --help`` shows for each.
OWN_COMMANDS: dict[str, Callable[[list[str]], int]] = {}
COMMAND_SUMMARIES: dict[str, str] = {}


def _subcommand(name: str, summary: str):
    """Register a subcommand (``summary``: its line in ``lm-eval-bias --help``) and run it with the
    exit codes every one shares (:mod:`lm_eval_bias.errors`): our own errors (bad input or
    configuration) print one message, ``lm-eval-bias <name>: ...``, and give exit code 2. Anything
    else is a bug and keeps its traceback."""

    def decorate(command):
        @functools.wraps(command)
        def run(argv: list[str]) -> int:
            try:
                return command(argv)
            except LmEvalBiasError as error:
                print(f"lm-eval-bias {name}: {error}", file=sys.stderr)
                return EXIT_BAD_INPUT

        OWN_COMMANDS[name] = run
        COMMAND_SUMMARIES[name] = summary
        return run

    return decorate


def _write(outputs: list[tuple[str, str]], inputs=()) -> None:
    """Write the rendered (path, text) outputs, all or none, and say so; never over an input."""
    from lm_eval_bias.report.outputs import write_all

    write_all(outputs, inputs)
    for target, _ in outputs:
        print(f"wrote {target}")


@_subcommand("tasks-dir", "print the folder of the task YAMLs, for the stock lm-eval's --include_path")
def _tasks_dir(argv: list[str]) -> int:
    parser = _ArgumentParser(
        prog="lm-eval-bias tasks-dir", description="Print the folder of lm-eval-bias's task YAMLs, for --include_path."
    )
    parser.parse_args(argv)
    print(tasks_dir())
    return EXIT_OK


@_subcommand("download", "fetch the benchmarks' public data once, for offline use")
def _download(argv: list[str]) -> int:
    parser = _ArgumentParser(
        prog="lm-eval-bias download",
        description="Fetch the benchmarks' public data into DIR/<benchmark>/<file>, "
        f"the layout {data.DATA_DIR_ENV} and --metadata data_dir expect.",
    )
    parser.add_argument(
        "sources",
        nargs="*",
        metavar="SOURCE",
        help=f"data files to fetch (default: all of {', '.join(sorted(data.SOURCES))})",
    )
    parser.add_argument(
        "--to",
        default=None,
        metavar="DIR",
        help=f"destination directory (default: the cache, {data.cache_dir()})",
    )
    args = parser.parse_args(argv)
    dest = args.to or data.cache_dir()
    try:
        paths = data.fetch_all(dest, args.sources or None)
    except OSError as error:  # downloads failing are DataErrors; this is the destination
        from lm_eval_bias.report.outputs import OutputError

        raise OutputError(
            f"cannot write {error.filename or dest}: {error.strerror or error}; choose a writable folder with --to"
        ) from None
    for path in paths:
        print(path)
    print(f"Done. Offline use: export {data.DATA_DIR_ENV}={Path(dest).resolve()}")
    return EXIT_OK


@_subcommand("tango-agreement", "how often TANGO's generation and probability methods agree")
def _tango_agreement(argv: list[str]) -> int:
    from lm_eval_bias.report import agreement
    from lm_eval_bias.report.outputs import strict_json

    parser = _ArgumentParser(
        prog="lm-eval-bias tango-agreement",
        description="Agreement between tango_misgender (generation) and tango_misgender_prob "
        "(next-pronoun probability), from the samples_*.jsonl files --log_samples wrote.",
    )
    parser.add_argument("generation_samples", type=Path, help="samples_tango_misgender_*.jsonl")
    parser.add_argument("probability_samples", type=Path, help="samples_tango_misgender_prob_*.jsonl")
    args = parser.parse_args(argv)
    print(strict_json(agreement.agreement(args.generation_samples, args.probability_samples), indent=2))
    return EXIT_OK


@_subcommand("check", "gate on results files (exit 0 when every rule holds, 1 when one fails)")
def _check(argv: list[str]) -> int:
    from lm_eval_bias import task_metadata
    from lm_eval_bias.report import check, results

    parser = _ArgumentParser(
        prog="lm-eval-bias check",
        description="Gate on results files: exit 0 when every rule holds, 1 when one fails, "
        "2 when the files or rules cannot be read. A rule is TASK[:METRIC] OP VALUE; a task's "
        "default metric is its headline one, which its YAML metadata names (ours: "
        + ", ".join(f"{task}: {metric}" for task, metric in task_metadata.headline_metrics().items())
        + "). "
        "Each checked number is shown with the documents it rests on (N); a partial run "
        "(--limit, a non-official data file, a subgroup selection) gets a note.",
    )
    parser.add_argument("results", nargs="+", help="results_*.json files or folders holding them")
    parser.add_argument(
        "--max",
        action="append",
        default=[],
        metavar="TASK[:METRIC]=VALUE",
        help="fail if the metric is above VALUE (repeatable)",
    )
    parser.add_argument(
        "--min",
        action="append",
        default=[],
        metavar="TASK[:METRIC]=VALUE",
        help="fail if the metric is below VALUE (repeatable)",
    )
    parser.add_argument(
        "--require",
        action="append",
        default=[],
        metavar="RULE",
        help="a rule such as 'tango_misgender:consistency_neo>=0.5' (repeatable)",
    )
    parser.add_argument("--policy", metavar="FILE", help="a YAML file with 'rules:' (and optionally 'gate:')")
    parser.add_argument(
        "--gate",
        choices=check.GATES,
        default=None,
        help="estimate (default): check point estimates; interval: a rule must hold "
        "for the whole 95%% interval (upper bound for <=, lower bound for >=)",
    )
    args = parser.parse_args(argv)
    rules = [check.parse_rule(r, "<=") for r in args.max] + [check.parse_rule(r, ">=") for r in args.min]
    rules += [check.parse_rule(r) for r in args.require]
    gate = args.gate
    if args.policy:
        policy_rules, policy_gate = check.load_policy(args.policy)
        rules += policy_rules
        gate = gate or policy_gate
    if not rules:
        parser.error("no rule given: use --max, --min, --require or --policy")
    gate = gate or "estimate"
    outcomes = check.evaluate(rules, results.load_runs(args.results), gate)
    print(check.summary(outcomes, gate))
    return EXIT_OK if all(o.passed for o in outcomes) else EXIT_GATE_FAILED


def _metric_columns(given: list[str]) -> list[tuple[str, str]] | None:
    """``--metric TASK:METRIC`` options as (task, metric) columns; None for the default columns."""
    columns = []
    for text in given:
        task, colon, metric = text.partition(":")
        if not colon or not task or not metric:
            raise ConfigurationError(f"--metric {text}: write TASK:METRIC, e.g. winoqueer:bias_score")
        columns.append((task, metric))
    return columns or None


@_subcommand("leaderboard", "models side by side, as Markdown, CSV or HTML")
def _leaderboard(argv: list[str]) -> int:
    from lm_eval_bias.report import leaderboard, results
    from lm_eval_bias.report.outputs import text_line

    parser = _ArgumentParser(
        prog="lm-eval-bias leaderboard",
        description="Models side by side: one row per model, per task its headline metric and "
        "per-subgroup metrics, with 95%% intervals and the documents each rests on (N). Where a model "
        "has a task in several results files, a complete run is used before a partial one, then the "
        "one with more documents, then the newest; every run used and skipped is listed (Runs). "
        "Prints markdown unless told to write files.",
    )
    parser.add_argument("results", nargs="+", help="results_*.json files or folders holding them")
    parser.add_argument("--markdown", metavar="FILE")
    parser.add_argument("--csv", metavar="FILE")
    parser.add_argument("--html", metavar="FILE")
    parser.add_argument(
        "--metric",
        action="append",
        default=[],
        metavar="TASK:METRIC",
        help="columns to show instead of the default ones (repeatable)",
    )
    args = parser.parse_args(argv)
    columns = _metric_columns(args.metric)
    runs = results.require_task_results(results.load_runs(args.results))
    renderers = {"markdown": leaderboard.to_markdown, "csv": leaderboard.to_csv, "html": leaderboard.to_html}
    # Render everything before writing anything, so that a bad input leaves no half output.
    rendered = [
        (getattr(args, kind), render(runs, columns)) for kind, render in renderers.items() if getattr(args, kind)
    ]
    if rendered:
        _write(rendered, [run.path for run in runs])
    else:
        print(leaderboard.to_markdown(runs, columns), end="")
    for choice in leaderboard.skipped_runs(leaderboard.choose_runs(runs)):
        print(
            text_line(
                f"lm-eval-bias leaderboard: note: skipped {choice.run.path} ({choice.base.status}) for "
                f"{choice.model}, {choice.task}: {choice.reason}"
            ),
            file=sys.stderr,
        )
    return EXIT_OK


def _number_text(value, digits: int) -> str:
    """A recomputed number for the terminal: N/A for what is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "N/A"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


@_subcommand("recompute", "a task's results again from its --log_samples file, without the model")
def _recompute(argv: list[str]) -> int:
    from lm_eval_bias.report import recompute
    from lm_eval_bias.report.outputs import strict_json, text_line

    parser = _ArgumentParser(
        prog="lm-eval-bias recompute",
        description="Aggregate a --log_samples file again with the task's own aggregations "
        "(same intervals, tests and seeds as the run), e.g. after editing or filtering samples.",
    )
    parser.add_argument("samples", type=Path, help="samples_<task>_<date>.jsonl")
    parser.add_argument("--task", help="the task, when the file name does not say it")
    parser.add_argument("--json", metavar="FILE", help='also write the numbers as JSON (non-numbers as "N/A")')
    args = parser.parse_args(argv)
    numbers = recompute.recompute(args.samples, args.task)
    if args.json:
        _write([(args.json, strict_json(numbers, indent=2) + "\n")], [args.samples])
    for key in sorted(numbers):
        name, _, filter_name = key.partition(",")
        if not name.endswith("_stderr"):
            stderr = numbers[f"{name}_stderr,{filter_name}"]
            print(
                text_line(
                    f"{name:<48} {filter_name:<8} {_number_text(numbers[key], 6):>14}  ± {_number_text(stderr, 4)}"
                )
            )
    return EXIT_OK


@_subcommand("report", "an HTML (and Markdown) report of one or more runs, with figures")
def _report(argv: list[str]) -> int:
    from lm_eval_bias.report import html as report_html
    from lm_eval_bias.report import results

    parser = _ArgumentParser(
        prog="lm-eval-bias report",
        description="A report of one or more runs: per benchmark, the figure its paper uses (with 95%% "
        "intervals and a caption saying what the reference line means) and tables of every metric with "
        "the documents it rests on (N); partial runs are marked with the reason. "
        "--html writes one self-contained file (inline SVG, no script, nothing fetched); --markdown "
        "the same tables without figures. With neither, the Markdown goes to stdout.",
    )
    parser.add_argument("results", nargs="+", help="results_*.json files or folders holding them")
    parser.add_argument("--html", metavar="FILE", help="write the HTML report here")
    parser.add_argument("--markdown", metavar="FILE", help="write the Markdown tables here")
    parser.add_argument("--title", default="lm-eval-bias report", help="the report's heading")
    args = parser.parse_args(argv)
    runs = results.load_runs(args.results)
    # Render everything before writing anything, so that a bad input leaves no half report.
    rendered = [
        (target, render(runs, args.title))
        for target, render in ((args.html, report_html.to_html), (args.markdown, report_html.to_markdown))
        if target
    ]
    if rendered:
        _write(rendered, [run.path for run in runs])
    else:
        print(report_html.to_markdown(runs, args.title), end="")
    return EXIT_OK


def own_commands_help() -> str:
    """What ``lm-eval-bias --help`` prints before lm-eval's own help: our subcommands, one line each."""
    width = max(map(len, COMMAND_SUMMARIES))
    lines = [
        "lm-eval-bias: lm-eval with the lm-eval-bias tasks always indexed. Every lm-eval command and flag",
        "works as with lm-eval (run, ls, validate, the flag-only form); lm-eval-bias adds these commands:",
        "",
        *(f"  {name:<{width}}  {summary}" for name, summary in COMMAND_SUMMARIES.items()),
        "",
        "lm-eval-bias COMMAND --help describes one of them. lm-eval's own help follows.",
        "",
    ]
    return "\n".join(lines)


def _show_our_logs() -> None:
    """Print this package's INFO lines (which data file, downloads) like lm-eval's own."""
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)-8s [lm_eval_bias] %(message)s", "%Y-%m-%d:%H:%M:%S")
        )
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def main(argv: list[str] | None = None) -> None:
    from_command_line = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    help_asked = not argv or argv[0] in ("-h", "--help")
    ours = bool(argv) and argv[0] in OWN_COMMANDS
    if from_command_line and hasattr(signal, "SIGPIPE") and (help_asked or ours):
        # `lm-eval-bias check ... | head`: end quietly when the reader stops, as Unix tools do
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if help_asked:
        # lm-eval's help knows nothing of our commands: ours first, then its own, which needs none
        # of the patches a run installs below.
        print(own_commands_help(), flush=True)
        from lm_eval.__main__ import cli_evaluate

        sys.argv = ["lm-eval-bias", *argv]
        cli_evaluate()  # prints the help and exits 0 (with no argument it returns)
        return
    if ours:
        _show_our_logs()
        sys.exit(OWN_COMMANDS[argv[0]](argv[1:]))

    _show_our_logs()
    models.register()
    _install_task_manager_shim()
    _install_evaluate_shim()
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm-eval-bias", *argv]
    try:
        cli_evaluate()
    except LmEvalBiasError as error:
        # Our errors say what, where and the fix: the traceback would only bury that.
        print(f"lm-eval-bias: error: {error}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except ValueError as error:
        if not _from_lm_eval_argument_checks(error):
            raise
        print(f"lm-eval-bias: error: {error}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def _from_lm_eval_argument_checks(error: BaseException) -> bool:
    """Whether lm-eval's own checks of its command line raised ``error`` (unknown task names,
    --metadata that is not JSON, ...): bad input, not a bug, so one line and exit code 2."""
    trace = error.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    where = Path(trace.tb_frame.f_code.co_filename).parts if trace is not None else ()
    return "lm_eval" in where and ("_cli" in where or "config" in where)
