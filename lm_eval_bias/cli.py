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
  ``--log_samples`` file, without the model.

``--use_cache PATH`` is made model-specific: lm-eval's cache key is the request
alone, so one cache shared by two models silently returns the first model's
log-likelihoods for the second.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
import sys
from pathlib import Path

from lm_eval_bias import data, models, tasks_dir

logger = logging.getLogger("lm_eval_bias")


def model_specific_cache_path(use_cache: str, model, model_args) -> str:
    """``use_cache`` extended with the model's name and a digest of model + model_args."""
    if isinstance(model_args, str):
        args_for_digest = model_args
        pretrained = re.search(r"(?:^|,)\s*pretrained=([^,]+)", model_args)
        pretrained = pretrained.group(1) if pretrained else ""
    else:
        args_for_digest = model_args or {}
        pretrained = str((model_args or {}).get("pretrained", ""))
    identity = json.dumps(
        {"model": str(model), "model_args": args_for_digest}, sort_keys=True, default=str
    )
    digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(pretrained).name or str(model)).strip("_")
    path = Path(use_cache)
    if path.is_dir() or use_cache.endswith(("/", "\\")):
        return str(path / f"{readable}__{digest}")
    return str(path.parent / f"{path.name}__{readable}__{digest}")


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


def _install_cache_path_shim() -> None:
    import lm_eval

    evaluate = lm_eval.simple_evaluate
    if getattr(evaluate, "_lm_eval_bias_shim", False):
        return

    def simple_evaluate(*args, **kwargs):
        if kwargs.get("use_cache"):
            path = model_specific_cache_path(
                kwargs["use_cache"], kwargs.get("model"), kwargs.get("model_args")
            )
            logger.info("lm-eval-bias: --use_cache %s -> %s (model-specific)", kwargs["use_cache"], path)
            kwargs["use_cache"] = path
        return evaluate(*args, **kwargs)

    simple_evaluate._lm_eval_bias_shim = True
    lm_eval.simple_evaluate = simple_evaluate


def _download(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-eval-bias download",
        description="Fetch the benchmarks' public data into DIR/<benchmark>/<file>, "
        f"the layout {data.DATA_DIR_ENV} and --metadata data_dir expect.",
    )
    parser.add_argument(
        "sources", nargs="*", metavar="SOURCE",
        help=f"data files to fetch (default: all of {', '.join(sorted(data.SOURCES))})",
    )
    parser.add_argument(
        "--to", default=None, metavar="DIR",
        help=f"destination directory (default: the cache, {data.cache_dir()})",
    )
    args = parser.parse_args(argv)
    dest = args.to or data.cache_dir()
    try:
        paths = data.fetch_all(dest, args.sources or None)
    except data.DataError as error:
        print(f"lm-eval-bias download: {error}", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    print(f"Done. Offline use: export {data.DATA_DIR_ENV}={Path(dest).resolve()}")
    return 0


def _tango_agreement(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-eval-bias tango-agreement",
        description="Agreement between tango_misgender (generation) and tango_misgender_prob "
        "(next-pronoun probability), from the samples_*.jsonl files --log_samples wrote.",
    )
    parser.add_argument("generation_samples", type=Path, help="samples_tango_misgender_*.jsonl")
    parser.add_argument("probability_samples", type=Path, help="samples_tango_misgender_prob_*.jsonl")
    args = parser.parse_args(argv)
    from lm_eval_bias.benchmarks import tango
    from lm_eval_bias.report.recompute import read_samples
    from lm_eval_bias.report.results import ResultsError

    try:
        loaded = [read_samples(path) for path in (args.generation_samples, args.probability_samples)]
        agreement = tango.method_agreement(*loaded)
    except (ResultsError, ValueError, KeyError) as error:
        print(f"lm-eval-bias tango-agreement: {error}", file=sys.stderr)
        return 1
    print(json.dumps(agreement, indent=2))
    return 0


def _check(argv: list[str]) -> int:
    from lm_eval_bias.report import check, results

    parser = argparse.ArgumentParser(
        prog="lm-eval-bias check",
        description="Gate on results files: exit 0 when every rule holds, 1 when one fails, "
        "2 when the files or rules cannot be read. A rule is TASK[:METRIC] OP VALUE; a task's "
        "default metric is its headline one ("
        + ", ".join(f"{task}: {metric}" for task, metric in results.HEADLINE_METRICS.items()) + ").",
    )
    parser.add_argument("results", nargs="+", help="results_*.json files or folders holding them")
    parser.add_argument("--max", action="append", default=[], metavar="TASK[:METRIC]=VALUE",
                        help="fail if the metric is above VALUE (repeatable)")
    parser.add_argument("--min", action="append", default=[], metavar="TASK[:METRIC]=VALUE",
                        help="fail if the metric is below VALUE (repeatable)")
    parser.add_argument("--require", action="append", default=[], metavar="RULE",
                        help="a rule such as 'tango_misgender:consistency_neo>=0.5' (repeatable)")
    parser.add_argument("--policy", metavar="FILE", help="a YAML file with 'rules:' (and optionally 'gate:')")
    parser.add_argument("--gate", choices=check.GATES, default=None,
                        help="estimate (default): check point estimates; interval: a rule must hold "
                        "for the whole 95%% interval (upper bound for <=, lower bound for >=)")
    args = parser.parse_args(argv)
    try:
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
    except results.ResultsError as error:
        print(f"lm-eval-bias check: {error}", file=sys.stderr)
        return 2
    print(check.summary(outcomes, gate))
    return 0 if all(o.passed for o in outcomes) else 1


def _leaderboard(argv: list[str]) -> int:
    from lm_eval_bias.report import leaderboard, results

    parser = argparse.ArgumentParser(
        prog="lm-eval-bias leaderboard",
        description="Models side by side: one row per model, per task its headline metric and "
        "per-subgroup metrics, with 95%% intervals. Prints markdown unless told to write files.",
    )
    parser.add_argument("results", nargs="+", help="results_*.json files or folders holding them")
    parser.add_argument("--markdown", metavar="FILE")
    parser.add_argument("--csv", metavar="FILE")
    parser.add_argument("--html", metavar="FILE")
    parser.add_argument("--metric", action="append", default=[], metavar="TASK:METRIC",
                        help="columns to show instead of the default ones (repeatable)")
    args = parser.parse_args(argv)
    try:
        runs = results.load_runs(args.results)
        columns = [tuple(c.split(":", 1)) for c in args.metric] or None
        if columns and any(len(c) != 2 for c in columns):
            raise results.ResultsError("--metric takes TASK:METRIC")
    except results.ResultsError as error:
        print(f"lm-eval-bias leaderboard: {error}", file=sys.stderr)
        return 2
    outputs = {"markdown": leaderboard.to_markdown, "csv": leaderboard.to_csv, "html": leaderboard.to_html}
    wrote = False
    for kind, render in outputs.items():
        target = getattr(args, kind)
        if target:
            Path(target).write_text(render(runs, columns), encoding="utf-8")
            print(f"wrote {target}")
            wrote = True
    if not wrote:
        print(leaderboard.to_markdown(runs, columns), end="")
    return 0


def _recompute(argv: list[str]) -> int:
    from lm_eval_bias.report import recompute, results

    parser = argparse.ArgumentParser(
        prog="lm-eval-bias recompute",
        description="Aggregate a --log_samples file again with the task's own aggregations "
        "(same intervals, tests and seeds as the run), e.g. after editing or filtering samples.",
    )
    parser.add_argument("samples", type=Path, help="samples_<task>_<date>.jsonl")
    parser.add_argument("--task", help="the task, when the file name does not say it")
    parser.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    try:
        numbers = recompute.recompute(args.samples, args.task)
    except results.ResultsError as error:
        print(f"lm-eval-bias recompute: {error}", file=sys.stderr)
        return 2
    for key in sorted(numbers):
        name, _, filter_name = key.partition(",")
        if not name.endswith("_stderr"):
            stderr = numbers[f"{name}_stderr,{filter_name}"]
            shown = f"{numbers[key]:.6g}" if isinstance(numbers[key], float) else numbers[key]
            print(f"{name:<48} {filter_name:<8} {shown:>14}  ± {stderr if stderr == 'N/A' else f'{stderr:.4g}'}")
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=2), encoding="utf-8")
    return 0


def _report(argv: list[str]) -> int:
    from lm_eval_bias.report import html as report_html
    from lm_eval_bias.report import results

    parser = argparse.ArgumentParser(
        prog="lm-eval-bias report",
        description="A report of one or more runs: per benchmark, the figure its paper uses (with 95%% "
        "intervals and a caption saying what the reference line means) and tables of every metric. "
        "--html writes one self-contained file (inline SVG, no script, nothing fetched); --markdown "
        "the same tables without figures. With neither, the Markdown goes to stdout.",
    )
    parser.add_argument("results", nargs="+", help="results_*.json files or folders holding them")
    parser.add_argument("--html", metavar="FILE", help="write the HTML report here")
    parser.add_argument("--markdown", metavar="FILE", help="write the Markdown tables here")
    parser.add_argument("--title", default="lm-eval-bias report", help="the report's heading")
    args = parser.parse_args(argv)
    try:
        runs = results.load_runs(args.results)
        # Render everything before writing anything, so that a bad input leaves no half report.
        rendered = {target: render(runs, args.title) for target, render in
                    ((args.html, report_html.to_html), (args.markdown, report_html.to_markdown)) if target}
        if not rendered:
            rendered = {None: report_html.to_markdown(runs, args.title)}
    except results.ResultsError as error:
        print(f"lm-eval-bias report: {error}", file=sys.stderr)
        return 2
    for target, text in rendered.items():
        if target is None:
            print(text, end="")
            continue
        try:
            Path(target).write_text(text, encoding="utf-8")
        except OSError as error:
            print(f"lm-eval-bias report: cannot write {target}: {error}", file=sys.stderr)
            return 2
        print(f"wrote {target}")
    return 0


def _show_our_logs() -> None:
    """Print this package's INFO lines (which data file, downloads) like lm-eval's own."""
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(
            "%(asctime)s %(levelname)-8s [lm_eval_bias] %(message)s", "%Y-%m-%d:%H:%M:%S"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "tasks-dir":
        print(tasks_dir())
        return
    own_commands = {"download": _download, "tango-agreement": _tango_agreement,
                    "check": _check, "leaderboard": _leaderboard, "recompute": _recompute,
                    "report": _report}
    if argv and argv[0] in own_commands:
        _show_our_logs()
        sys.exit(own_commands[argv[0]](argv[1:]))

    _show_our_logs()
    models.register()
    _install_task_manager_shim()
    _install_cache_path_shim()
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm-eval-bias", *argv]
    cli_evaluate()
