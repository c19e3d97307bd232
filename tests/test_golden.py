"""Golden results: every task of the package, run on generated data, gives exactly the numbers it gave before.

What ``tests/golden/<task>.json`` pins, for each of the package's tasks: the task's version, every key
and value of its entry in lm-eval's ``results`` (metrics, standard errors, intervals, sample counts),
its ``higher_is_better`` and ``n-samples``, and every logged sample's metric values with its
``doc_id``. Paths, dates and durations are not in them. Floats are compared exactly (their shortest
round-trip ``repr``): a change in the last digit is a change in the numbers.

The runs: the log-likelihood and generation tasks with :class:`fake_models.HashedLM` (answers fixed
by the request's text), ``winoqueer_mlm`` with the ``hf-mlm`` backend and a tiny random BERT on one
thread, the classifier filters with :class:`fake_models.HashedDetoxify` (a real classifier's float32
scores differ in the last digits between machines) and the real VADER, all on the files
``benchmark_data.write_data_dir`` generates (no released data needed).

A failure means the numbers moved. If that is intended (a change of how a task scores, which comes
with a task version bump and a changelog entry), rewrite the files and review their diff::

    pytest tests/test_golden.py --regenerate-golden
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import lm_eval
import pytest
import torch

import lm_eval_bias
from benchmark_data import winoqueer_corpus, write_data_dir
from fake_models import HashedDetoxify, HashedLM
from helpers import write_run_files
from lm_eval_bias import scorers
from lm_eval_bias.report.recompute import recompute
from lm_eval_bias.report.values import ResultsError
from tiny_models import build_tiny_bert

# the same numbers on every supported lm-eval (tests/test_lm_eval_versions.py)
pytestmark = pytest.mark.lm_eval_versions

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
MLM_TASKS = ("winoqueer_mlm",)


def package_tasks() -> list[str]:
    """Every task the package's YAML files define (``task:``), sorted."""
    names = []
    for path in sorted(Path(lm_eval_bias.tasks_dir()).glob("*/*.yaml")):
        match = re.search(r"^task:\s*(\S+)", path.read_text(encoding="utf-8"), re.MULTILINE)
        if match:
            names.append(match.group(1))
    return sorted(names)


TASKS = package_tasks()


def comparable(value):
    """``value`` with NaN and infinities as strings (JSON has no literal for them, and NaN != NaN)."""
    if isinstance(value, float):
        # a metric's value may be a float subclass that carries its companions (lm_eval_bias.companions)
        return float(value) if math.isfinite(value) else repr(value)
    if isinstance(value, dict):
        return {str(key): comparable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [comparable(item) for item in value]
    return value


def task_record(output: dict, task: str) -> dict:
    """What the golden file of ``task`` pins, from one ``simple_evaluate`` output."""
    samples = []
    for sample in output["samples"][task]:
        metrics = {name: sample[name] for name in sample["metrics"]}
        samples.append({"doc_id": sample["doc_id"], "filter": sample["filter"], **metrics})
    return comparable(
        {
            "task": task,
            "version": output["versions"][task],
            "results": output["results"][task],
            "higher_is_better": output["higher_is_better"][task],
            "n-samples": output["n-samples"][task],
            "samples": samples,
        }
    )


def differences(expected, actual, where: str = "") -> list[str]:
    """Paths at which ``actual`` differs from ``expected``, each with both values."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = []
        for key in sorted(set(expected) | set(actual)):
            if key not in actual:
                found.append(f"{where}/{key}: missing (was {expected[key]!r})")
            elif key not in expected:
                found.append(f"{where}/{key}: new ({actual[key]!r})")
            else:
                found += differences(expected[key], actual[key], f"{where}/{key}")
        return found
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [d for index, pair in enumerate(zip(expected, actual)) for d in differences(*pair, f"{where}[{index}]")]
    if type(expected) is float and type(actual) is float and _same_float(expected, actual):
        return []
    if type(expected) is not type(actual) or expected != actual:
        return [f"{where}: {expected!r} -> {actual!r}"]
    return []


def _same_float(expected: float, actual: float) -> bool:
    """Equal, or within 4 units in the last place: numpy and scipy releases reorder the sums inside
    some of their functions (pearsonr's), which moves the last bits of a result and nothing else."""
    if expected == actual:
        return True
    return math.isfinite(expected) and abs(expected - actual) <= 4 * math.ulp(max(abs(expected), abs(actual)))


def golden_text(record: dict) -> str:
    """``record`` as JSON: the summary indented, then one line per sample (diffs stay readable)."""
    summary = json.dumps({key: value for key, value in record.items() if key != "samples"}, indent=1, sort_keys=True)
    samples = ",\n  ".join(json.dumps(sample, sort_keys=True) for sample in record["samples"])
    return summary[: -len("\n}")] + ',\n "samples": [\n  ' + samples + "\n ]\n}\n"


@pytest.fixture(scope="module")
def hashed_detoxify():
    """``HashedDetoxify`` in place of Detoxify for the module's runs."""
    scorers.reset()
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(scorers.SCORERS, "detoxify", (lambda options: (), HashedDetoxify))
        yield
    scorers.reset()


@pytest.fixture(scope="module")
def golden_runs(tmp_path_factory, hashed_detoxify) -> dict[str, dict]:
    """Every task's lm-eval output, from two runs: ``HashedLM`` for all but the masked-LM task."""
    root = tmp_path_factory.mktemp("golden")
    metadata = {"data_dir": str(write_data_dir(root / "data"))}
    manager = lm_eval_bias.task_manager(metadata=metadata, include_defaults=False)
    causal = [task for task in TASKS if task not in MLM_TASKS]
    output = lm_eval.simple_evaluate(model=HashedLM(), tasks=causal, log_samples=True, task_manager=manager)
    runs = dict.fromkeys(causal, output)
    bert = build_tiny_bert(root / "tiny-bert", winoqueer_corpus())
    # One thread: float32 sums in another order would change the last digits.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        output = lm_eval.simple_evaluate(
            model="hf-mlm",
            model_args=f"pretrained={bert}",
            device="cpu",
            batch_size=8,
            tasks=list(MLM_TASKS),
            log_samples=True,
            task_manager=manager,
        )
    finally:
        torch.set_num_threads(threads)
    runs.update(dict.fromkeys(MLM_TASKS, output))
    return runs


@pytest.fixture(scope="module")
def golden_outputs(golden_runs) -> dict[str, dict]:
    """Every task's golden record."""
    return {task: task_record(output, task) for task, output in golden_runs.items()}


# HashedLM's log-likelihoods are no log-probabilities (some above 0), which the reader refuses for
# WinoQueer's sentence scores; winoqueer_mlm (a real BERT) and tests/test_merge.py cover its samples.
@pytest.mark.parametrize("task", [task for task in TASKS if task != "winoqueer"])
def test_the_samples_file_gives_the_run_s_results_again(task, golden_runs, tmp_path):
    """Each document holds each value once; the results file beside it names the companions the reader
    derives, so every number, companions included, is the run's."""
    samples, entry = write_run_files(golden_runs[task], task, tmp_path)
    assert json.loads(json.dumps(recompute(samples))) == entry


def test_a_samples_file_cut_short_still_gives_every_companion(golden_runs, tmp_path):
    samples, entry = write_run_files(golden_runs["tango_disclosure"], "tango_disclosure", tmp_path)
    lines = samples.read_text(encoding="utf-8").splitlines()
    samples.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")  # without the first document of each metric
    recomputed = recompute(samples)
    assert set(recomputed) == set(entry) and "toxicity_genderqueer_ci_lower,scored" in recomputed


def test_samples_without_their_results_file_are_refused_naming_it(golden_runs, tmp_path):
    samples, _ = write_run_files(golden_runs["tango_disclosure"], "tango_disclosure", tmp_path)
    (tmp_path / "results_2026-01-01T00-00-00.000000.json").unlink()
    with pytest.raises(ResultsError) as error:
        recompute(samples)
    assert str(error.value) == (
        f"{samples}: its documents leave out the intervals, counts and p-values tango_disclosure derives from each "
        "value, which the results file lm-eval wrote with them names (results_2026-01-01T00-00-00.000000.json, not "
        "beside it); keep the samples file beside that results file"
    )


def test_every_task_of_the_package_has_a_golden_file():
    assert len(TASKS) == 18
    assert sorted(path.stem for path in GOLDEN_DIR.glob("*.json")) == TASKS


@pytest.mark.parametrize("task", TASKS)
def test_results_equal_the_golden_file(task, golden_outputs, request):
    actual = golden_outputs[task]
    path = GOLDEN_DIR / f"{task}.json"
    if request.config.getoption("--regenerate-golden"):
        GOLDEN_DIR.mkdir(exist_ok=True)
        path.write_text(golden_text(actual), encoding="utf-8")
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert actual["samples"], f"{task}: no samples were scored"
    found = differences(expected, json.loads(json.dumps(actual)))
    assert not found, f"{task}: {len(found)} numbers moved:\n" + "\n".join(found[:40])
