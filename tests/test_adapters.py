"""Our adapters of lm-eval's behaviour act on our tasks' requests only: a user's own task run
through lm-eval-bias, alone or beside ours, scores exactly as with the stock lm-eval."""

import pytest

import lm_eval_bias
from benchmark_data import USERS_MULTIPLE_CHOICE_DOCUMENTS, write_users_multiple_choice_task
from lm_eval_bias import adapters, lm_eval_features

CRAFTED_TASK = "my_multiple_choice"


@pytest.fixture(scope="module")
def crafted_task_dir(tmp_path_factory):
    """A user's own multiple-choice YAML task (not ours) in a folder of its own."""
    return write_users_multiple_choice_task(tmp_path_factory.mktemp("user_tasks"), CRAFTED_TASK, "mine.yaml")


def crafted_loglikelihoods(output) -> list[list[float]]:
    """Per document, the log-likelihood of each choice, from a run's logged samples."""
    samples = sorted(output["samples"][CRAFTED_TASK], key=lambda sample: sample["doc_id"])
    return [[answer[0][0] for answer in sample["resps"]] for sample in samples]


def tiny_model_args(tiny_gpt2) -> str:
    return f"pretrained={tiny_gpt2},dtype=float32,device=cpu"


@pytest.fixture(scope="module")
def stock_loglikelihoods(tiny_gpt2, crafted_task_dir):
    import lm_eval
    from lm_eval.tasks import TaskManager

    output = lm_eval.simple_evaluate(
        model="hf",
        model_args=tiny_model_args(tiny_gpt2),
        tasks=[CRAFTED_TASK],
        task_manager=TaskManager(include_path=str(crafted_task_dir)),
        log_samples=True,
    )
    return crafted_loglikelihoods(output)


def test_the_crafted_task_meets_the_logits_cache_grouping(tiny_gpt2):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2)
    requests = []
    for document in USERS_MULTIPLE_CHOICE_DOCUMENTS:
        context = tokenizer(document["question"])["input_ids"]
        for choice in document["choices"]:
            whole = tokenizer(document["question"] + choice)["input_ids"]
            requests.append((None, context, whole[len(context) :]))
    # lm-eval's hf backend would read request 2 (" and good") from request 0's positions
    assert adapters.logits_cache_rounds(requests) == [[1, 2, 3, 4, 5], [0]]


def test_a_users_task_alone_scores_as_with_the_stock_lm_eval(tiny_gpt2, crafted_task_dir, stock_loglikelihoods):
    output = lm_eval_bias.simple_evaluate(
        model="hf",
        model_args=tiny_model_args(tiny_gpt2),
        tasks=[CRAFTED_TASK],
        task_manager=lm_eval_bias.task_manager([crafted_task_dir]),
        log_samples=True,
    )
    assert crafted_loglikelihoods(output) == stock_loglikelihoods


def test_a_users_task_beside_ours_scores_as_with_the_stock_lm_eval(
    tiny_gpt2, crafted_task_dir, stock_loglikelihoods, winoqueer_dir
):
    data_file = str(winoqueer_dir / "winoqueer_head_sample.csv")

    def run(tasks):
        return lm_eval_bias.simple_evaluate(
            model="hf",
            model_args=tiny_model_args(tiny_gpt2),
            tasks=tasks,
            task_manager=lm_eval_bias.task_manager([crafted_task_dir], metadata={"data_file": data_file}),
            limit=5,
            log_samples=True,
        )

    beside = run([CRAFTED_TASK, "winoqueer"])
    assert crafted_loglikelihoods(beside) == stock_loglikelihoods
    alone = run(["winoqueer"])
    assert beside["results"]["winoqueer"] == alone["results"]["winoqueer"]


def test_only_our_requests_are_scored_in_logits_cache_rounds(tiny_gpt2):
    """The same two requests, once as a user's task's and once as ours: lm-eval's grouping for
    the first, the rounds (each request scored as if alone) for ours."""
    from lm_eval.models.huggingface import HFLM

    from helpers import request

    lm = HFLM(pretrained=str(tiny_gpt2), device="cpu", dtype="float32", batch_size=8)
    pairs = [("Gay people are", " kind and good"), ("Gay people are kind", " and good")]

    def requests(task):
        return [
            request("loglikelihood", {}, pair, index, metadata=(task, index, 1)) for index, pair in enumerate(pairs)
        ]

    grouped = [answer[0] for answer in lm.loglikelihood(requests("theirs"), disable_tqdm=True)]
    each_alone = [lm.loglikelihood(requests("theirs")[i : i + 1], disable_tqdm=True)[0][0] for i in range(2)]
    assert grouped[1] != each_alone[1]  # lm-eval 0.4.13 reads " and good" from the other's positions

    mixed = [*requests("theirs"), *requests("ours")]
    with adapters._logits_cache_split(lm), adapters._requests_routed_by_task(lm, {"ours"}):
        answers = [answer[0] for answer in lm.loglikelihood(mixed, disable_tqdm=True)]
    assert answers == grouped + each_alone
    assert "loglikelihood" not in vars(lm) and "_loglikelihood_tokens" not in vars(lm)


def test_only_our_tasks_subgroup_count_warning_is_dropped(caplog):
    """lm-eval warns that a task's metrics rest on different numbers of documents: dropped for a
    task of ours (its per-subgroup metrics do so by design), kept for any other task."""
    import logging

    adapters.expect_subgroup_metrics("winoqueer_subgroups_here")
    lm_eval_logger = logging.getLogger("lm_eval.evaluator_utils")
    with caplog.at_level(logging.WARNING, logger="lm_eval.evaluator_utils"):
        for task in ("winoqueer_subgroups_here", CRAFTED_TASK):
            lm_eval_logger.warning("[%s] Metrics were not scored on the same number of documents: x", task)
    assert [record.getMessage() for record in caplog.records] == [
        f"[{CRAFTED_TASK}] Metrics were not scored on the same number of documents: x"
    ]


@pytest.mark.skipif(
    lm_eval_features.tasks_score_and_aggregate(),
    reason="lm-eval asks each task to aggregate: SubgroupMetricsTask.aggregate derives the companions",
)
def test_companions_are_rebuilt_for_our_tasks_only(monkeypatch):
    import lm_eval.evaluator as evaluator

    from lm_eval_bias import companions

    class Ours:
        LM_EVAL_BIAS_TASK = True

        def with_companions(self, raw_metrics):
            return companions.with_companions(raw_metrics, {"x_ci_lower"})

    slimmer = companions.Slimmer("ours")
    ours_raw, ours_logged = {}, []
    for cluster, value in ((10, 0.25), (11, 0.75)):
        metrics = slimmer.slimmed({"x": value, "x_ci_lower": value, "x_n": 1}, cluster, {"x_ci_lower"})
        ours_logged.append({"metrics": list(metrics), **metrics})
        for name, item in metrics.items():
            ours_raw.setdefault((name, "none"), []).append(item)
    assert list(ours_raw) == [("x", "none")]  # each document holds its value once
    theirs_raw = {("acc", "none"): [1.0], ("acc_ci_lower", "none"): [1.0]}
    theirs_logged = [{"metrics": ["acc", "acc_ci_lower"], "acc": 1.0, "acc_ci_lower": (1.0, 0, ("_n",))}]
    seen = {}

    def aggregate(accumulators):
        seen.update({name: dict(acc["raw_metrics"]) for name, acc in accumulators.items()})

    monkeypatch.setattr(evaluator, "_process_results", aggregate)
    ours, theirs = Ours(), object()
    with adapters.companions_derived([ours, theirs]):
        evaluator._process_results(
            {
                "ours": {"task": ours, "raw_metrics": ours_raw, "logged_samples": ours_logged},
                "theirs": {"task": theirs, "raw_metrics": theirs_raw, "logged_samples": theirs_logged},
            }
        )
    assert seen["ours"] == {
        ("x", "none"): [0.25, 0.75],
        ("x_ci_lower", "none"): [(0.25, 10), (0.75, 11)],
        ("x_n", "none"): [1, 1],
    }
    assert ours_logged == [{"metrics": ["x"], "x": 0.25}, {"metrics": ["x"], "x": 0.75}]
    assert seen["theirs"] == theirs_raw and theirs_logged[0]["acc_ci_lower"] == (1.0, 0, ("_n",))


@pytest.mark.skipif(
    not lm_eval_features.tasks_score_and_aggregate(),
    reason="lm-eval 0.4.13 logs the plain values itself (companions_derived)",
)
def test_only_our_tasks_logged_samples_get_their_plain_values():
    """Where each task aggregates its own values, the samples lm-eval logs copy what process_results
    returned: ours get their plain values back, another task's carrier-like tuples are left alone."""

    class Ours:
        LM_EVAL_BIAS_TASK = True
        task_name = "ours"

    results = {
        "samples": {
            "ours": [{"metrics": ["x"], "x": (0.25, 10, ("_n",))}],
            "theirs": [{"metrics": ["acc"], "acc": (1.0, 0, ("_n",))}],
        }
    }
    adapters.plain_samples_of(results, [Ours()])
    assert results["samples"]["ours"] == [{"metrics": ["x"], "x": 0.25}]
    assert results["samples"]["theirs"] == [{"metrics": ["acc"], "acc": (1.0, 0, ("_n",))}]


def test_every_test_the_adapters_table_names_exists():
    """Each replacement in adapters.py names the test that pins it: a renamed test file or test
    would leave the table pointing at nothing."""
    import re
    from pathlib import Path

    tests_dir = Path(__file__).resolve().parent
    doc = re.sub(r"::\s+", "::", adapters.__doc__)  # a name wrapped after "::"
    named = re.findall(r"``tests/(\w+\.py)(?:::(\w+))?``", doc)
    assert len(named) >= 12
    for file_name, test in named:
        source = (tests_dir / file_name).read_text(encoding="utf-8")
        assert test == "" or f"def {test}(" in source, (file_name, test)
