"""``lm-eval-bias compare`` and the worsening gate end to end: two real runs of every default task,
with two different tiny GPT-2 models and ``--log_samples``, compared through the CLI.

Each run scores a few documents of the small generated data files (tests/benchmark_data.py) with a
random 2-layer GPT-2 (tests/tiny_models.py: seed 0 for the baseline, seed 1 for the candidate) and
tiny random Detoxify checkpoints for the classifier-scored tasks.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark_data import write_data_dir
from lm_eval_bias.metric_keys import metric_range
from lm_eval_bias.report.compare import compare_runs
from lm_eval_bias.report.paired_metrics import EXACT_TEST
from test_llama_server import DEFAULT_TASKS
from tiny_models import build_tiny_gpt2, winoqueer_sentences

pytestmark = pytest.mark.e2e  # runs the package end to end: `pytest -m "not slow"` includes it

BIN = Path(sys.executable).parent
# Documents per task: enough for every task to have both sides of its gaps; each run takes ~1 minute.
LIMIT = 6
MAX_GEN_TOKS = 8
# In some tasks no document has a value of the headline metric (the tiny models' continuations hold no
# pronoun, rating or descriptor, so the task leaves the metric out of its results): compare gives it as
# N/A with the reason.
COMPARED_TASKS = DEFAULT_TASKS
METRIC_FIELDS = ("baseline", "candidate", "difference", "ci_lower", "ci_upper", "pvalue", "pvalue_bh", "n", "test")


def strict_json(path: Path):
    def no_nan(token):
        raise AssertionError(f"{path} contains a bare {token}")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=no_nan)


def lm_eval_bias(*args: str, cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "lm-eval-bias"), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def tiny_run(model: Path, out: Path, metadata: dict, cwd: Path) -> Path:
    """Every default task on ``model``, its samples logged; returns the run's output folder."""
    completed = lm_eval_bias(
        "run",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={model},dtype=float32",
        "--device",
        "cpu",
        "--batch_size",
        "16",
        "--tasks",
        ",".join(DEFAULT_TASKS),
        "--limit",
        str(LIMIT),
        "--gen_kwargs",
        f"max_gen_toks={MAX_GEN_TOKS}",
        "--metadata",
        json.dumps(metadata),
        "--output_path",
        str(out),
        "--log_samples",
        cwd=cwd,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-6000:]
    (results,) = out.rglob("results_*.json")
    return results.parent


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_detoxify) -> dict[str, Path]:
    """The baseline (tiny GPT-2, seed 0) and the candidate (seed 1): each run's output folder."""
    root = tmp_path_factory.mktemp("compare-e2e")
    checkpoint, config_dir = tiny_detoxify["original"]
    metadata = {
        "data_dir": str(write_data_dir(root / "data")),
        "detoxify_checkpoint": str(checkpoint),
        "detoxify_config_dir": str(config_dir),
    }
    corpus = winoqueer_sentences()
    folders = {}
    for side, seed in (("baseline", 0), ("candidate", 1)):
        # 1024 positions: room for SCM's longest prompts and their continuations
        model = build_tiny_gpt2(root / f"tiny-gpt2-{side}", corpus, seed=seed, n_positions=1024)
        folders[side] = tiny_run(model, root / side, metadata, root)
    return folders


def compare(
    baseline: Path, candidate: Path, out: Path, tasks=COMPARED_TASKS
) -> tuple[subprocess.CompletedProcess, dict]:
    """``lm-eval-bias compare`` of ``tasks`` with every output; the terminal output and the JSON."""
    out.mkdir(parents=True, exist_ok=True)
    completed = lm_eval_bias(
        "compare",
        str(baseline),
        str(candidate),
        "--tasks",
        ",".join(tasks),
        "--json",
        str(out / "comparison.json"),
        "--markdown",
        str(out / "comparison.md"),
        "--html",
        str(out / "comparison.html"),
        cwd=out,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-6000:]
    return completed, strict_json(out / "comparison.json")


def metrics_by_key(document: dict) -> dict[tuple[str, str], dict]:
    return {(task["task"], metric["metric"]): metric for task in document["tasks"] for metric in task["metrics"]}


@pytest.fixture(scope="module")
def forward(runs, tmp_path_factory):
    return compare(runs["baseline"], runs["candidate"], tmp_path_factory.mktemp("forward"))


def check_task_entry(task: dict) -> None:
    """A task's entry in compare's JSON: its documents, settings and every field of every metric."""
    assert (task["n_baseline"], task["n_candidate"], task["n_matched"]) == (LIMIT, LIMIT, LIMIT), task["task"]
    # the two runs differ in their model only
    (setting,) = task["setting_differences"]
    assert setting.startswith("config.model_args.pretrained: "), setting
    assert task["metrics"][0]["metric"] == task["headline_metric"], task["task"]
    for metric in task["metrics"]:
        assert set(METRIC_FIELDS) | {"cluster_unit", "design_effect"} <= set(metric), (task["task"], metric)
        # a design effect is measured where documents share a unit, else null, saying why
        assert (metric["design_effect"] is None) == ("design_effect" in metric["null_reasons"]), (task["task"], metric)
        assert 0 <= metric["n"] <= LIMIT, (task["task"], metric)
        # a number that cannot be computed (one matched document: no interval) is null, saying why
        missing = [field for field in METRIC_FIELDS if metric[field] is None]
        assert sorted(missing) == sorted(set(missing) & set(metric["null_reasons"])), (task["task"], metric)
        if metric["difference"] is not None:
            assert metric["difference"] == pytest.approx(metric["candidate"] - metric["baseline"], abs=1e-12)
        if metric["ci_lower"] is not None:
            assert metric["ci_lower"] <= metric["difference"] <= metric["ci_upper"], (task["task"], metric)
            assert 0 <= metric["pvalue"] <= metric["pvalue_bh"] <= 1, (task["task"], metric)


def test_the_default_tasks_are_compared_with_every_field(forward, runs):
    completed, document = forward
    assert document["skipped"] == []
    assert sorted(task["task"] for task in document["tasks"]) == sorted(COMPARED_TASKS)
    for task in document["tasks"]:
        check_task_entry(task)
    for task in COMPARED_TASKS:  # the terminal table names every task
        assert f"{task} (version " in completed.stdout
    assert document["baseline_path"].startswith(str(runs["baseline"]))
    assert document["candidate_path"].startswith(str(runs["candidate"]))


@pytest.mark.parametrize("task", DEFAULT_TASKS)
def test_each_default_task_is_compared(task, runs, tmp_path):
    _, document = compare(runs["baseline"], runs["candidate"], tmp_path, tasks=[task])
    (entry,) = document["tasks"]
    check_task_entry(entry)


def test_identical_runs_differ_by_nothing_and_pass_the_gate(runs, tmp_path):
    _, document = compare(runs["baseline"], runs["baseline"], tmp_path / "same")
    for (task, name), metric in metrics_by_key(document).items():
        assert metric["baseline"] == metric["candidate"], (task, name)
        if metric["difference"] is None:
            continue
        assert metric["difference"] == 0, (task, name)
        assert metric["pvalue"] == 1 and metric["pvalue_bh"] == 1, (task, name)
        if metric["test"].startswith("exact McNemar"):
            # the box interval without discordant pairs is not [0, 0]: n pairs bound the difference
            assert metric["ci_lower"] == -metric["ci_upper"] < 0, (task, name, metric)
            assert "no discordant pairs: p = 1" in metric["note"], (task, name, metric)
        else:  # a swap test of identical values: no interval, and the note says why
            assert (metric["ci_lower"], metric["ci_upper"]) == (None, None), (task, name, metric)
            assert "'s difference is 0: no interval" in metric["note"] or "too few " in metric["note"], (task, name)
        if metric["worsening_ci"] is not None:  # the image of the difference's interval: it holds 0
            lower, upper = metric["worsening_ci"]
            assert metric["worsening"] == 0 and lower <= 0 <= upper, (task, name, metric)
    gated = [f"{task}=0" for task in COMPARED_TASKS if headline(document, task)["worsening"] is not None]
    assert gated, "no task has an ideal value to gate on"
    rules = [argument for rule in gated for argument in ("--max-worsening", rule)]
    completed = lm_eval_bias("check", str(runs["baseline"]), "--baseline", str(runs["baseline"]), *rules, cwd=tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    # every outcome says that the two sides are one run, and the strict gate does not pass them
    assert completed.stdout.count("baseline and candidate are the same run (") == len(gated), completed.stdout
    strict = lm_eval_bias(
        "check", str(runs["baseline"]), "--baseline", str(runs["baseline"]), *rules, "--gate", "strict", cwd=tmp_path
    )
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert f"0 passed, {len(gated)} failed\n" in strict.stdout, strict.stdout


def headline(document: dict, task: str) -> dict:
    (entry,) = [entry for entry in document["tasks"] if entry["task"] == task]
    return entry["metrics"][0]


def test_swapping_the_runs_negates_every_difference_and_keeps_every_pvalue(forward, runs, tmp_path):
    _, document = forward
    _, swapped = compare(runs["candidate"], runs["baseline"], tmp_path / "swapped")
    forward_metrics, swapped_metrics = metrics_by_key(document), metrics_by_key(swapped)
    assert forward_metrics.keys() == swapped_metrics.keys()
    for key, metric in forward_metrics.items():
        other = swapped_metrics[key]
        assert (other["baseline"], other["candidate"]) == (metric["candidate"], metric["baseline"]), key
        assert [field for field in METRIC_FIELDS if other[field] is None] == [
            field for field in METRIC_FIELDS if metric[field] is None
        ], key
        if metric["difference"] is None:
            continue
        assert other["difference"] == pytest.approx(-metric["difference"], abs=1e-12), key
        if metric["ci_lower"] is None:
            continue
        assert (other["ci_lower"], other["ci_upper"]) == pytest.approx(
            (-metric["ci_upper"], -metric["ci_lower"]), abs=1e-12
        ), key
        assert other["pvalue"] == pytest.approx(metric["pvalue"], abs=1e-12), key
        assert other["pvalue_bh"] == pytest.approx(metric["pvalue_bh"], abs=1e-12), key


def gate(candidate: Path, baseline: Path, rule: str, gate_name: str, cwd: Path) -> subprocess.CompletedProcess:
    return lm_eval_bias(
        "check", str(candidate), "--baseline", str(baseline), "--max-worsening", rule, "--gate", gate_name, cwd=cwd
    )


def test_the_gate_follows_the_paired_interval_of_the_worsening(forward, runs, tmp_path):
    """For each task with an ideal value, in both directions. With an interval of the worsening: a margin
    below it fails where the paired test finds the change, a margin above it (that the worsening can
    reach) passes, and the strict gate fails unless the interval lies wholly below the margin. Without
    one (too few documents or templates): the default gate passes, saying nothing could be shown, and the
    strict gate fails."""
    _, swapped = compare(runs["candidate"], runs["baseline"], tmp_path / "swapped")
    directions = [(runs["candidate"], runs["baseline"], forward[1]), (runs["baseline"], runs["candidate"], swapped)]
    with_interval = without_interval = 0
    for candidate, baseline, document in directions:
        strict_bounds = {
            (row.task, row.metric): row.strict_upper
            for task in compare_runs(baseline, candidate).tasks
            for row in task.metrics
        }
        for task in COMPARED_TASKS:
            metric = headline(document, task)
            if metric["worsening"] is None:
                continue
            if metric["worsening_ci"] is None:
                without_interval += 1
                cases = [("estimate", 0, 0, ": not shown to be worse by more than 0\n"), ("strict", 0, 1, "")]
            else:
                with_interval += 1
                cases = interval_cases(metric, strict_bounds[(task, metric["metric"])])
            for gate_name, margin, expected, said in cases:
                completed = gate(candidate, baseline, f"{task}={margin:g}", gate_name, tmp_path)
                assert completed.returncode == expected, (task, gate_name, margin, completed.stdout + completed.stderr)
                verdict = "FAIL" if expected else "PASS"
                assert f"  {verdict}  {task} worsening <= {margin:g}   [" in completed.stdout, completed.stdout
                assert f"{'0 passed, 1 failed' if expected else '1 passed, 0 failed'}\n" in completed.stdout
                assert said in completed.stdout, completed.stdout
                if metric["worsening_ci"] is None and gate_name == "estimate":
                    assert "nothing could be shown: no interval of the worsening" in completed.stdout
    # Six documents from one or two templates give most tasks no interval; the failing side of the gate is
    # exercised on larger runs in test_compare_cli_runs.py.
    assert (with_interval, without_interval) >= (2, 6), (with_interval, without_interval)


def interval_cases(metric: dict, strict_upper: float | None) -> list[tuple[str, float, int, str]]:
    """(gate, margin, exit code, text) of the rules that a headline worsening with an interval decides;
    ``strict_upper``: the betting bound the strict gate reads where the test is not exact."""
    lower, upper = metric["worsening_ci"]
    low, high = metric_range(metric["metric"])
    # the worsening lies within [-widest, widest]: a margin of widest or more is refused
    widest = max(abs(low - metric["ideal"]), abs(high - metric["ideal"]))
    cases = []
    if upper < widest:  # a margin above the interval that the worsening can reach
        above = (max(upper, 0) + widest) / 2
        shown = upper if metric["test"] == EXACT_TEST else strict_upper
        strict_fails = metric["n"] < 6 or shown is None or not shown < above
        cases += [("estimate", above, 0, ""), ("strict", above, int(strict_fails), "")]
    if lower > 0:  # a margin below the interval fails where the paired test finds the change
        cases.append(("estimate", lower / 2, int(metric["pvalue"] < 0.05), ""))
    if upper >= 0:  # not demonstrably within 0
        cases.append(("strict", 0, 1, ""))
    return cases


def test_two_documents_of_one_template_show_no_interval(forward):
    """TANGO's binary consistency on the two matched prompts of the binary group. Both fill the test
    data's one template, so the swap test has one unit to swap: p = 1 and no interval, whatever the two
    prompts did (the tiny models' tokenizer, and so their answers, depend on whether the released
    WinoQueer sentences are beside the clone)."""
    metric = metrics_by_key(forward[1])[("tango_misgender_prob", "consistency_binary")]
    assert (metric["n"], metric["pvalue"]) == (2, 1)
    assert (metric["cluster_unit"], metric["test"]) == (
        "template",
        "exact cluster sign-flip permutation test (all 2 swaps); interval inverting it",
    )
    assert metric["note"] == (
        "too few clusters (G = 1): a permutation test of fewer than 6 clusters cannot reach p < 0.05, so no interval"
    )
    assert metric["worsening"] == abs(metric["candidate"] - 1) - abs(metric["baseline"] - 1)
    assert metric["ci_lower"] is None and metric["worsening_ci"] is None


def test_the_gate_never_fails_a_worsening_its_paired_test_does_not_support(forward, runs, tmp_path):
    """The metric above: worse by 1, but with no interval of its worsening the default gate does not fail
    it, and says that nothing could be shown."""
    completed = gate(
        runs["candidate"], runs["baseline"], "tango_misgender_prob:consistency_binary=0.5", "estimate", tmp_path
    )
    assert completed.returncode == 0, completed.stdout
    assert "nothing could be shown: no interval of the worsening" in completed.stdout, completed.stdout


def test_what_cannot_be_gated_or_compared_is_bad_input(runs, tmp_path):
    """Exit code 2, naming the problem: a task neither run has, a metric without an ideal value, a
    run without its samples files."""
    cases = [
        (
            ["--max-worsening", "winoqueer_mlm=1"],
            "rule 'winoqueer_mlm worsening <= 1': neither run has task 'winoqueer_mlm'; similar: winoqueer;",
        ),
        (
            ["--max-worsening", "scm_mc_prob=1"],
            "rule 'scm_mc_prob worsening <= 1': scm_mc_prob's metadata declares no ideal value for warmth_pick",
        ),
    ]
    for rule, message in cases:
        completed = lm_eval_bias(
            "check", str(runs["candidate"]), "--baseline", str(runs["baseline"]), *rule, cwd=tmp_path
        )
        assert completed.returncode == 2, completed.stdout + completed.stderr
        assert message in completed.stderr, completed.stderr
    (results,) = runs["baseline"].rglob("results_*.json")
    without_samples = tmp_path / "without-samples"
    without_samples.mkdir()
    (without_samples / results.name).write_bytes(results.read_bytes())
    completed = lm_eval_bias(
        "compare", str(without_samples), str(runs["candidate"]), "--tasks", "winoqueer", cwd=tmp_path
    )
    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert "no samples file of winoqueer beside it (samples_winoqueer_<date>.jsonl)" in completed.stderr
