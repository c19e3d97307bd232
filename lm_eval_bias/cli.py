"""The ``lm-eval-bias`` command: lm-eval's own CLI with our tasks always indexed.

Everything lm-eval accepts works unchanged (``run``, ``ls``, ``validate``, the
legacy flag-only form, a user's own ``--include_path``), plus:

- ``lm-eval-bias tasks-dir``: print the task directory, for the stock CLI's
  ``--include_path``;
- ``lm-eval-bias download [--to DIR] [SOURCE ...]``: fetch the public data
  once, for air-gapped clusters;
- each benchmark's own commands, as its record declares them (``BenchmarkRecord.commands``), such as
  ``lm-eval-bias tango-agreement GEN.jsonl PROB.jsonl``: how often TANGO's generation and
  probability methods agree, from their ``--log_samples`` files;
- ``lm-eval-bias check RESULTS... --max winoqueer=65 ...``: exit 0/1 gate for CI; with
  ``--baseline BASELINE --max-worsening winoqueer=2``, a gate on the paired comparison of two runs;
- ``lm-eval-bias compare BASELINE CANDIDATE``: two runs compared document by document, with paired
  tests (a table, Markdown, JSON, HTML with forest plots);
- ``lm-eval-bias leaderboard RESULTS...``: models side by side (markdown, CSV, HTML);
- ``lm-eval-bias recompute SAMPLES.jsonl``: a task's results again from its
  ``--log_samples`` file, without the model;
- ``lm-eval-bias report RESULTS...``: an HTML (and Markdown) report with figures; with
  ``BASELINE CANDIDATE --compare``, their paired comparison as its last section;
- ``lm-eval-bias shards TASK --shards N --to DIR``: one ``--samples`` file per shard of a task, and
  the command that runs each; ``lm-eval-bias merge SHARD... --output_path DIR``: the shards'
  outputs merged into the one run they are parts of, exactly.

``lm-eval-bias --help`` lists these (with one line each) before lm-eval's own help; each
has its own ``--help``.

Every one of these subcommands reports bad input or configuration the same way:
one message, ``lm-eval-bias <subcommand>: <what, where, fix>``, on stderr and
exit code 2; ``check`` exits 1 when a rule fails; 0 otherwise (see
:mod:`lm_eval_bias.errors`). Output files are written whole or not at all.

``--use_cache PATH`` is keyed on the model, its arguments and its weights
(:mod:`lm_eval_bias.cache_key`).
"""

from __future__ import annotations

import functools
import importlib
import logging
import math
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from lm_eval_bias import adapters, backends, benchmarks, data, evaluate, models, tasks_dir
from lm_eval_bias.errors import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_OK,
    ArgumentParser,
    ConfigurationError,
    LmEvalBiasError,
    print_run_error,
)

logger = logging.getLogger("lm_eval_bias")


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
    parser = ArgumentParser(
        prog="lm-eval-bias tasks-dir", description="Print the folder of lm-eval-bias's task YAMLs, for --include_path."
    )
    parser.parse_args(argv)
    print(tasks_dir())
    return EXIT_OK


@_subcommand("download", "fetch the benchmarks' public data once, for offline use")
def _download(argv: list[str]) -> int:
    parser = ArgumentParser(
        prog="lm-eval-bias download",
        description="Fetch the benchmarks' public data into DIR/<benchmark>/<file>, "
        f"the layout {data.DATA_DIR_ENV} and --metadata data_dir expect.",
    )
    parser.add_argument(
        "sources",
        nargs="*",
        metavar="SOURCE",
        help="data files to fetch (default: all; "
        + "; ".join(
            f"{record.title}: {', '.join(source.name for source in record.sources)}"
            for record in benchmarks.records().values()
            if record.sources
        )
        + ")",
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


def _benchmark_command(target: str) -> Callable[[list[str]], int]:
    """The command a benchmark record declares as ``"module:function"``, imported when it runs."""
    module_name, function_name = target.split(":")

    def run(argv: list[str]) -> int:
        return getattr(importlib.import_module(module_name), function_name)(argv)

    return run


def _register_benchmark_commands() -> None:
    """Register the commands each benchmark record declares (``BenchmarkRecord.commands``)."""
    for record in benchmarks.records().values():
        for name, summary, target in record.commands:
            _subcommand(name, summary)(_benchmark_command(target))


# Here, so that ``lm-eval-bias --help`` lists them after the data commands and before the report's.
_register_benchmark_commands()


@_subcommand("check", "gate on results files (exit 0 when every rule holds, 1 when one fails)")
def _check(argv: list[str]) -> int:
    from lm_eval_bias import task_metadata
    from lm_eval_bias.report import gate_rules, gate_summary, results, threshold_gate, worsening_gate

    parser = ArgumentParser(
        prog="lm-eval-bias check",
        description="Gate on results files: exit 0 when every rule holds, 1 when one fails, "
        "2 when the files or rules cannot be read. A rule is TASK[:METRIC] OP VALUE; a task's "
        "default metric is its headline one, which its YAML metadata names (ours: "
        + ", ".join(f"{task}: {metric}" for task, metric in task_metadata.headline_metrics().items())
        + "). "
        "Each checked number is shown with the documents it rests on (N); a partial run "
        "(--limit, a non-official data file, a subgroup selection) gets a note. "
        "With --baseline, --max-worsening TASK[:METRIC]=MARGIN compares the candidate with the baseline "
        "document by document (as lm-eval-bias compare does) and fails when the candidate is further from "
        "the metric's ideal value than the baseline by more than MARGIN (in the metric's units) with "
        "significance: the paired 95% interval of the worsening lies wholly above MARGIN and the paired "
        "test has p < 0.05.",
    )
    parser.add_argument(
        "results",
        nargs="+",
        help="results_*.json files or folders holding them (with --baseline: the candidate run, one results "
        "file or output folder with its --log_samples files)",
    )
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
        help="a rule such as 'TASK:METRIC<=65' (repeatable)",
    )
    parser.add_argument(
        "--baseline",
        metavar="BASELINE",
        help="the run the candidate is compared with: a results file or output folder with its --log_samples files",
    )
    parser.add_argument(
        "--max-worsening",
        action="append",
        default=[],
        metavar="TASK[:METRIC]=MARGIN",
        help="with --baseline: fail if the candidate is worse than the baseline by more than MARGIN (repeatable)",
    )
    parser.add_argument(
        "--policy", metavar="FILE", help="a YAML file with 'rules:' and/or 'max_worsening:' (and optionally 'gate:')"
    )
    parser.add_argument(
        "--gate",
        choices=gate_rules.GATES,
        default=None,
        help="estimate (default): check point estimates; interval: a rule must hold "
        "for the whole 95%% interval (upper bound for <=, lower bound for >=); strict: as interval, and a "
        "worsening rule fails unless the paired interval of the worsening lies wholly below its margin (so it "
        "fails a comparison too small to show an interval, one run on both sides, or every document tied)",
    )
    args = parser.parse_args(argv)
    rules = [gate_rules.parse_rule(r, "<=") for r in args.max] + [gate_rules.parse_rule(r, ">=") for r in args.min]
    rules += [gate_rules.parse_rule(r) for r in args.require]
    worsening = [gate_rules.parse_worsening_rule(r) for r in args.max_worsening]
    gate = args.gate
    if args.policy:
        policy = gate_rules.read_policy(args.policy)
        rules += policy.rules
        worsening += policy.worsening
        gate = gate or policy.gate
    if not rules and not worsening:
        parser.error("no rule given: use --max, --min, --require, --max-worsening or --policy")
    if worsening and not args.baseline:
        parser.error(f"worsening rule '{worsening[0]}' needs the run to compare with: give --baseline BASELINE")
    if args.baseline and not worsening:
        parser.error("--baseline is used by worsening rules only: add --max-worsening TASK[:METRIC]=MARGIN")
    if args.baseline and len(args.results) != 1:
        parser.error("with --baseline, give one candidate run (a results file or its output folder)")
    gate = gate or "estimate"
    outcomes = threshold_gate.evaluate(rules, results.load_runs(args.results), gate) if rules else []
    if worsening:
        comparison = worsening_gate.compare_for(worsening, args.baseline, args.results[0])
        outcomes += worsening_gate.evaluate_worsening(worsening, comparison, gate)
    print(gate_summary.summary(outcomes, gate))
    return EXIT_OK if all(o.passed for o in outcomes) else EXIT_GATE_FAILED


@_subcommand("compare", "did it get more biased? two runs compared document by document, with paired tests")
def _compare(argv: list[str]) -> int:
    from lm_eval_bias.report import compare, compare_outputs

    parser = ArgumentParser(
        prog="lm-eval-bias compare",
        description="Compare two runs of the same tasks document by document: for each task in both, its "
        "headline and subgroup metrics in each run, the paired difference (candidate minus baseline) with its "
        "95% interval, the paired test's p-value (Benjamini-Hochberg adjusted across a task's subgroups), the "
        "matched documents and the test. Documents are paired by content, so reordered or partly overlapping "
        "runs pair correctly; runs of different task versions or data files are refused. Prints the table; "
        "--markdown, --json and --html also write it to files.",
    )
    parser.add_argument("baseline", help="results file or output folder, with the --log_samples files beside it")
    parser.add_argument("candidate", help="results file or output folder, with the --log_samples files beside it")
    parser.add_argument(
        "--tasks",
        action="append",
        default=[],
        metavar="TASK[,TASK...]",
        help="compare only these tasks (default: every task in both runs)",
    )
    parser.add_argument("--markdown", metavar="FILE")
    parser.add_argument("--json", metavar="FILE", help="strict JSON (no NaN), the fields documented in the README")
    parser.add_argument("--html", metavar="FILE", help="one self-contained page with a forest plot per task")
    args = parser.parse_args(argv)
    tasks = [task for given in args.tasks for task in given.split(",") if task] or None
    comparison = compare.compare_runs(args.baseline, args.candidate, tasks=tasks)
    if not comparison.tasks:
        from lm_eval_bias.report.values import ResultsError

        raise ResultsError(f"no task can be compared: {'; '.join(comparison.skipped)}; give two runs of the same tasks")
    renderers = {
        "markdown": compare_outputs.to_markdown,
        "json": compare_outputs.to_json,
        "html": compare_outputs.to_html,
    }
    # Render everything before writing anything, so that a bad input leaves no half output.
    rendered = [(getattr(args, kind), render(comparison)) for kind, render in renderers.items() if getattr(args, kind)]
    if rendered:
        _write(rendered, _run_files(args.baseline, args.candidate))
    print(compare_outputs.to_text(comparison), end="")
    return EXIT_OK


def _run_files(*sources: str) -> list[Path]:
    """The files a comparison reads (results and samples files), which no output may replace."""
    files = []
    for source in map(Path, sources):
        # A results file's samples files lie beside it; an output folder holds them in a folder per model.
        files += sorted(source.rglob("*.json*")) if source.is_dir() else [source, *source.parent.glob("*.json*")]
    return files


def _metric_columns(given: list[str]) -> list[tuple[str, str]] | None:
    """``--metric TASK:METRIC`` options as (task, metric) columns; None for the default columns."""
    from lm_eval_bias import task_metadata

    columns = []
    for text in given:
        task, colon, metric = text.partition(":")
        if not colon or not task or not metric:
            raise ConfigurationError(f"--metric {text}: write TASK:METRIC, e.g. {task_metadata.example_metric()}")
        columns.append((task, metric))
    return columns or None


@_subcommand("leaderboard", "models side by side, as Markdown, CSV or HTML")
def _leaderboard(argv: list[str]) -> int:
    from lm_eval_bias.report import leaderboard, results
    from lm_eval_bias.report.outputs import text_line

    parser = ArgumentParser(
        prog="lm-eval-bias leaderboard",
        description="Models side by side: one row per model, per task its headline metric and "
        "per-subgroup metrics, with 95% intervals and the documents each rests on (N). Where a model "
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

    parser = ArgumentParser(
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

    parser = ArgumentParser(
        prog="lm-eval-bias report",
        description="A report of one or more runs: per benchmark, the figure its paper uses (with 95% "
        "intervals and a caption saying what the reference line means) and tables of every metric with "
        "the documents it rests on (N); partial runs are marked with the reason. "
        "--html writes one self-contained file (inline SVG, no script, nothing fetched); --markdown "
        "the same tables without figures. With neither, the Markdown goes to stdout.",
    )
    parser.add_argument("results", nargs="+", help="results_*.json files or folders holding them")
    parser.add_argument("--html", metavar="FILE", help="write the HTML report here")
    parser.add_argument("--markdown", metavar="FILE", help="write the Markdown tables here")
    parser.add_argument("--title", default="lm-eval-bias report", help="the report's heading")
    parser.add_argument(
        "--compare",
        action="store_true",
        help="with two runs, BASELINE CANDIDATE (each a results file or output folder with its --log_samples "
        "files): add a section comparing them document by document, as lm-eval-bias compare does",
    )
    args = parser.parse_args(argv)
    if args.compare and len(args.results) != 2:
        parser.error(f"--compare needs two runs, BASELINE CANDIDATE; got {len(args.results)}")
    runs = results.load_runs(args.results)
    comparison = None
    if args.compare:
        from lm_eval_bias.report import compare

        comparison = compare.compare_runs(*args.results)
    # Render everything before writing anything, so that a bad input leaves no half report.
    rendered = [
        (target, render(runs, args.title, comparison))
        for target, render in ((args.html, report_html.to_html), (args.markdown, report_html.to_markdown))
        if target
    ]
    inputs = [run.path for run in runs] + (_run_files(*args.results) if args.compare else [])
    if rendered:
        _write(rendered, inputs)
    else:
        print(report_html.to_markdown(runs, args.title, comparison), end="")
    return EXIT_OK


def _make_folder(folder: Path, option: str) -> None:
    """Create an output folder (and its parents), or say why it cannot be, naming the option."""
    from lm_eval_bias.report.outputs import OutputError

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(
            f"cannot create {folder}: {error.strerror or error}; give {option} a folder you can write"
        ) from None


@_subcommand("shards", "split one run of a task across machines: --samples files and their command lines")
def _shards(argv: list[str]) -> int:
    import json

    from lm_eval_bias import shards
    from lm_eval_bias.report.outputs import write_all

    parser = ArgumentParser(
        prog="lm-eval-bias shards",
        description="Cut a task's documents into N contiguous blocks, write one --samples file per block "
        "(DIR/<task>-shard-<k>-of-<N>.json) and print the command line that runs each; fill in the model, run "
        "each anywhere, then join them with lm-eval-bias merge, which gives the numbers of one whole run.",
    )
    parser.add_argument("task", help="the task (its documents are counted by building it, with --metadata)")
    parser.add_argument("--shards", type=int, required=True, metavar="N", help="how many shards")
    parser.add_argument("--to", required=True, metavar="DIR", help="the folder for the --samples files")
    parser.add_argument(
        "--metadata", metavar="JSON", help="the --metadata the run will use (data_file, data_dir, options)"
    )
    args = parser.parse_args(argv)
    try:
        metadata = json.loads(args.metadata) if args.metadata is not None else None
    except ValueError as error:
        raise ConfigurationError(
            f"--metadata {args.metadata}: not JSON ({error}); write e.g. '{{\"seed\": 1}}'"
        ) from None
    if metadata is not None and not isinstance(metadata, dict):
        raise ConfigurationError(f"--metadata {args.metadata}: give a JSON object, e.g. '{{\"seed\": 1}}'")
    files = shards.shard_files(args.task, shards.task_documents(args.task, metadata), args.shards, args.to)
    _make_folder(Path(args.to), "--to")
    write_all([(str(path), text) for path, text in files])
    for shard, (path, _) in enumerate(files, start=1):
        print(shards.shard_command(args.task, path, f"OUT/shard-{shard}-of-{args.shards}", args.metadata))
    print(f"then: lm-eval-bias merge OUT/shard-*-of-{args.shards} --output_path OUT/merged", file=sys.stderr)
    return EXIT_OK


@_subcommand("merge", "shards of one run (lm-eval-bias shards) merged into that run's results, exactly")
def _merge(argv: list[str]) -> int:
    from lm_eval_bias.report import merge

    parser = ArgumentParser(
        prog="lm-eval-bias merge",
        description="Merge the shards of one run (each run with --samples FILE --log_samples): their samples in "
        "document order, every metric aggregated again as one run does, written as one run "
        "(OUTPUT/<model>/results_<date>.json and samples_<task>_<date>.jsonl). Shards of another model, task "
        "version or config, data file, option or lm-eval version, and documents in two shards, are refused; "
        "documents in no shard leave the merged run partial, and are listed.",
    )
    parser.add_argument("shards", nargs="+", help="the shards' output folders or results files")
    parser.add_argument("--output_path", required=True, metavar="DIR", help="the folder of the merged run")
    args = parser.parse_args(argv)
    outputs, merges = merge.merge(args.shards, args.output_path)
    _make_folder(outputs[0][0].parent, "--output_path")
    _write([(str(path), text) for path, text in outputs], _run_files(*args.shards))
    for task_merge in merges:
        note = merge.missing_note(task_merge)
        if note:
            print(f"lm-eval-bias merge: {note}", file=sys.stderr)
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
    missing = None if {"-h", "--help"} & set(argv) else backends.missing_package(_backend_named(argv))
    if missing is not None:
        # before lm-eval is imported: it would build every task, then fail with a traceback
        print_run_error(missing)
        sys.exit(EXIT_BAD_INPUT)

    _show_our_logs()
    models.register()
    adapters.install_task_manager_shim(tasks_dir())
    adapters.install_simple_evaluate_shim(evaluate.simple_evaluate)
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm-eval-bias", *argv]
    try:
        cli_evaluate()
    except LmEvalBiasError as error:
        # Our errors say what, where and the fix: the traceback would only bury that.
        print_run_error(error)
        sys.exit(EXIT_BAD_INPUT)
    except ValueError as error:
        if not _from_lm_eval_argument_checks(error):
            raise
        print_run_error(error)
        sys.exit(EXIT_BAD_INPUT)


def _backend_named(argv: list[str]) -> str | None:
    """The backend a run's command line names, as lm-eval's parser reads it (``--model NAME``,
    ``--model=NAME``, ``-M NAME``; the last one wins).

    Parameters
    ----------
    argv : list of str
        The arguments after the command (``run`` or the flag-only form).

    Returns
    -------
    str or None
        None when no backend is named (lm-eval's default, or one from a ``--config`` file, which
        :func:`lm_eval_bias.evaluate.simple_evaluate` checks).
    """
    named = None
    for position, argument in enumerate(argv):
        if argument in ("--model", "-M") and position + 1 < len(argv):
            named = argv[position + 1]
        elif argument.startswith("--model="):
            named = argument.partition("=")[2]
    return named


def _from_lm_eval_argument_checks(error: BaseException) -> bool:
    """Whether lm-eval's own checks of its command line raised ``error`` (unknown task names,
    --metadata that is not JSON, ...): bad input, not a bug, so one line and exit code 2."""
    trace = error.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    where = Path(trace.tb_frame.f_code.co_filename).parts if trace is not None else ()
    return "lm_eval" in where and ("_cli" in where or "config" in where)
