"""Data-parallel runs (what ``accelerate launch -m lm_eval`` does on GPUs), here on CPU: two
processes in a gloo process group against one process, on the same tasks and models.

Each rank evaluates every second document; lm-eval gathers the per-document values to rank 0,
and lm-eval-bias puts them back in document order (``lm_eval_bias.distributed``). Rank 0's
results must be one process's: every metric, interval, p-value and N, and the logged samples.
"""

import csv
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from winoqueer_reference import write_pairs_file

pytestmark = pytest.mark.e2e  # runs the package end to end: `pytest -m "not slow"` includes it

WORKER = Path(__file__).resolve().parent / "distributed_worker.py"
WORLD_SIZE = 2
# WinoQueer's hf requests go through lm-eval's logits cache, which scores a request within a
# longer one of the same shard: which requests meet depends on the shard, and so do the last
# bits of a score (as they do on the batch size in one process).
SCORE_TOLERANCE = 1e-6


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_workers(spec: dict, workdir: Path, world_size: int) -> dict:
    """The worker once per rank (or once, alone), each with the environment accelerate launch gives
    its processes; rank 0's output."""
    spec = {**spec, "output": str(workdir / f"out_{world_size}.json")}
    spec_file = workdir / f"spec_{world_size}.json"
    spec_file.write_text(json.dumps(spec))
    port = free_port()
    processes = []
    for rank in range(world_size):
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        if world_size > 1:
            env.update(
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(port),
                RANK=str(rank),
                LOCAL_RANK=str(rank),
                WORLD_SIZE=str(world_size),
                LOCAL_WORLD_SIZE=str(world_size),
                ACCELERATE_USE_CPU="true",
            )
        log = open(workdir / f"log_{world_size}_{rank}.txt", "w")
        processes.append(
            (
                subprocess.Popen(
                    [sys.executable, str(WORKER), str(spec_file)],
                    cwd=workdir,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                ),
                log,
            )
        )
    return {"processes": processes, "output": Path(spec["output"]), "workdir": workdir, "world_size": world_size}


def stop(started: dict) -> None:
    for process, log in started["processes"]:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()


def finish(started: dict, timeout: float = 600) -> list:
    try:
        for process, _ in started["processes"]:
            process.wait(timeout=timeout)
    finally:
        stop(started)
    for rank, (process, _) in enumerate(started["processes"]):
        log = (started["workdir"] / f"log_{started['world_size']}_{rank}.txt").read_text()
        assert process.returncode == 0, f"rank {rank} of {started['world_size']}:\n{log[-6000:]}"
    return json.loads(started["output"].read_text())["runs"]


def split_sentences(rows: list[dict]) -> list[set[int]]:
    """Rows whose requests split one sentence at different words (as one request per sentence
    sends them): lm-eval's logits cache would score them wrongly together, so the request gate
    scores them in rounds (``adapters.logits_cache_rounds``), on each process's share."""
    from lm_eval_bias.benchmarks.winoqueer import scoring as wq

    contexts_of: dict[str, dict[str, set[int]]] = {}
    for index, row in enumerate(rows):
        plan = wq.pair_plan(row["sent_x"], row["sent_y"])
        for context, continuation in wq.pair_requests(row["sent_x"], row["sent_y"], plan, "<prefix>"):
            contexts_of.setdefault(context + continuation, {}).setdefault(context, set()).add(index)
    return [set().union(*by_context.values()) for by_context in contexts_of.values() if len(by_context) > 1]


@pytest.fixture(scope="module")
def pair_file(tmp_path_factory, winoqueer_dir):
    """Head-sample pairs, among them one group that splits "Straight people are sinful." at two
    different words, all on rank 0's documents (even positions), so that only rank 0's share
    meets lm-eval's logits-cache problem; then every 1000th pair of the gender subset,
    with one Nonbinary pair, whose subgroup's metrics exist on one rank only."""
    with open(winoqueer_dir / "winoqueer_head_sample.csv", encoding="utf-8-sig", newline="") as f:
        head = list(csv.DictReader(f))
    groups = split_sentences(head)
    conflicting, other = sorted(groups[0]), set().union(*groups[1:])
    plain = [row for index, row in enumerate(head) if index not in groups[0] and index not in other]
    rows = []
    for index in conflicting:
        rows += [head[index], plain.pop(0)]
    rows += plain
    with open(winoqueer_dir / "winoqueer_gender_subset.csv", encoding="utf-8-sig", newline="") as f:
        rows += list(csv.DictReader(f))[::1000]
    # one of those repeats a head-sample pair, and a repeated pair is an error
    rows = list({(row["Gender_ID_x"], row["Gender_ID_y"], row["sent_x"], row["sent_y"]): row for row in rows}.values())
    nonbinary = [index for index, row in enumerate(rows) if row["Gender_ID_x"] == "NB"]
    rows = [row for index, row in enumerate(rows) if index not in nonbinary[1:]]
    (split,) = split_sentences(rows)
    assert len(split) >= 2 and {index % WORLD_SIZE for index in split} == {0}
    path = tmp_path_factory.mktemp("pairs") / "pairs.csv"
    write_pairs_file(path, rows)
    return path


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory, winoqueer_dir):
    from tiny_models import build_tiny_bert, winoqueer_sentences

    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), winoqueer_sentences())


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_gpt2_long_context, tiny_bert, tiny_detoxify, pair_file, winoqueer_dir):
    """One process and two, started together: ``(one process's runs, rank 0's runs)``."""
    checkpoint, config_dir = tiny_detoxify["original"]
    generation = {
        "data_dir": str(winoqueer_dir.parent),
        "detoxify_checkpoint": str(checkpoint),
        "detoxify_config_dir": str(config_dir),
    }
    spec = {
        "classifier_batch_size": 1,
        "runs": [
            {
                "model": "hf",
                "pretrained": str(tiny_gpt2_long_context),
                "tasks": ["winoqueer"],
                "metadata": {"data_file": str(pair_file)},
            },
            # 5 documents: rank 0 gets 3, rank 1 gets 2 and pads its requests with a copy of its last
            # one (gendercare_genderpair's, the last task), whose extra generation must not be scored
            {
                "model": "hf",
                "pretrained": str(tiny_gpt2_long_context),
                "limit": 5,
                "gen_kwargs": "max_gen_toks=6",
                "tasks": ["tango_misgender", "gendercare_genderpair"],
                "metadata": generation,
            },
            {
                "model": "hf-mlm",
                "pretrained": str(tiny_bert),
                "tasks": ["winoqueer_mlm"],
                "limit": 15,
                "metadata": {"data_file": str(pair_file)},
            },
        ],
    }
    workdir = tmp_path_factory.mktemp("several-processes")
    alone = run_workers(spec, workdir, 1)
    together = run_workers(spec, workdir, WORLD_SIZE)
    try:
        return finish(alone), finish(together)
    finally:
        stop(together)


def test_the_run_covers_what_can_differ_between_shards(runs):
    alone, _ = runs
    winoqueer = alone[0]
    # a metric that only some documents have, all of them in one rank's shard (every 2nd document)
    ranks_of = {}
    for sample in winoqueer["samples"]["winoqueer"]:
        for metric in sample["metrics"]:
            ranks_of.setdefault(metric, set()).add(sample["doc_id"] % WORLD_SIZE)
    assert len(ranks_of["bias_score_nonbinary"]) == 1 and len(ranks_of["bias_score_lgbtq"]) == 2
    # one request per sentence, the context starting with the model's prefix token as text
    assert all(
        arguments[0].startswith("<|endoftext|>")
        for sample in winoqueer["samples"]["winoqueer"]
        for arguments in sample["arguments"]
    )
    assert alone[1]["results"]["gendercare_genderpair"]["sample_len"] == 5


@pytest.mark.parametrize(
    "index, task", [(0, "winoqueer"), (1, "tango_misgender"), (1, "gendercare_genderpair"), (2, "winoqueer_mlm")]
)
def test_rank_0_reports_what_one_process_reports(runs, index, task):
    alone, together = (run[index] for run in runs)
    one, two = alone["results"][task], together["results"][task]
    assert set(two) == set(one)
    assert two["sample_len"] == one["sample_len"]
    assert together["n-samples"][task] == alone["n-samples"][task]
    tolerance = SCORE_TOLERANCE if task == "winoqueer" else 0
    for key, value in one.items():
        if tolerance and key.startswith(("sent_x_score", "sent_y_score")) and isinstance(value, float):
            assert two[key] == pytest.approx(value, rel=tolerance), key
        else:  # outcomes, bias scores, intervals, p-values, counts
            assert two[key] == value, key
    # the logged samples, in document order, each scored as one process scored it
    samples_one, samples_two = alone["samples"][task], together["samples"][task]
    assert [s["doc_id"] for s in samples_two] == [s["doc_id"] for s in samples_one]
    for first, second in zip(samples_one, samples_two):
        assert second["arguments"] == first["arguments"]
        assert len(second["resps"]) == len(first["resps"])
        for metric in first["metrics"]:
            if tolerance and isinstance(first[metric], float) and metric.endswith("_score"):
                assert second[metric] == pytest.approx(first[metric], rel=tolerance), (first["doc_id"], metric)
            else:
                assert second[metric] == first[metric], (first["doc_id"], metric)


def test_merge_puts_every_value_at_its_documents_place():
    from lm_eval_bias.distributed import CallRecord, merge_shards

    # documents 0..4 over two ranks (0, 2, 4 and 1, 3), two filter passes; "lesbian" is on rank 1 only
    returned = {0: ("score",), 1: ("score", "lesbian"), 2: ("score",), 3: ("score", "lesbian"), 4: ("score",)}
    shards, records, samples = [], [], []
    for rank in (0, 1):
        record, shard, logged = CallRecord(), {}, []
        for filter_name in ("a", "b"):
            for document in range(rank, 5, 2):
                record.add(returned[document])
                for name in returned[document]:
                    shard.setdefault((name, filter_name), []).append(f"{name}{document}{filter_name}")
                logged.append((filter_name, document))
        shards.append(shard)
        records.append(record.export())
        samples.append(logged)
    raw_metrics, logged = merge_shards(["a", "b"], shards, records, samples)
    assert list(raw_metrics) == [("score", "a"), ("lesbian", "a"), ("score", "b"), ("lesbian", "b")]
    assert raw_metrics[("score", "a")] == ["score0a", "score1a", "score2a", "score3a", "score4a"]
    assert raw_metrics[("lesbian", "b")] == ["lesbian1b", "lesbian3b"]
    assert logged == [(f, d) for f in ("a", "b") for d in range(5)]
    assert records[0][0] == [("score",)]  # one shape stored once
    shards[1][("lesbian", "a")].pop()
    with pytest.raises(ValueError, match="rank 1: its values do not match"):
        merge_shards(["a", "b"], shards, records, samples)


def test_fewer_documents_than_processes_is_refused_before_any_request():
    from types import SimpleNamespace

    from lm_eval_bias.checks import check_shards

    task = SimpleNamespace(eval_docs=list(range(10)), task_name="winoqueer", config=SimpleNamespace(task="winoqueer"))
    assert check_shards(SimpleNamespace(world_size=4), 3, [task]) == [
        "winoqueer: 3 document(s) for 4 processes; lm-eval gives each process every 4th document and fails on a "
        "process with none. Fix: --limit 4 or more, or at most 3 processes"
    ]
    assert check_shards(SimpleNamespace(world_size=4), None, [task]) == []
    assert check_shards(SimpleNamespace(world_size=1), 1, [task]) == []


def test_accelerate_launch_of_the_cli_with_hf_mlm(tmp_path, tiny_bert, pair_file):
    """The real launcher and the real CLI: ``accelerate launch --cpu --num_processes 2 -m lm_eval_bias
    run --model hf-mlm ...`` writes one results file, equal to one process's."""
    bin_dir = Path(sys.executable).parent
    arguments = [
        "run",
        "--model",
        "hf-mlm",
        "--model_args",
        f"pretrained={tiny_bert}",
        "--tasks",
        "winoqueer_mlm",
        "--limit",
        "15",
        "--metadata",
        json.dumps({"data_file": str(pair_file)}),
        "--log_samples",
    ]
    # one thread each: torch's reductions over threads would move the scores' last bits
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    launched = {
        "alone": subprocess.Popen(
            [str(bin_dir / "lm-eval-bias"), *arguments, "--output_path", "alone"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ),
        "together": subprocess.Popen(
            [
                str(bin_dir / "accelerate"),
                "launch",
                "--cpu",
                "--num_processes",
                str(WORLD_SIZE),
                "--num_machines",
                "1",
                "--mixed_precision",
                "no",
                "--dynamo_backend",
                "no",
                "--main_process_port",
                str(free_port()),
                "-m",
                "lm_eval_bias",
                *arguments,
                "--output_path",
                "together",
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ),
    }
    outputs = {}
    try:
        for name, process in launched.items():
            log, _ = process.communicate(timeout=300)
            assert process.returncode == 0, f"{name}:\n{log[-5000:]}"
            results_files = list((tmp_path / name).rglob("results_*.json"))
            assert len(results_files) == 1, results_files  # rank 0 alone writes
            samples_file = next((tmp_path / name).rglob("samples_winoqueer_mlm_*.jsonl"))
            outputs[name] = (
                json.loads(results_files[0].read_text())["results"]["winoqueer_mlm"],
                [json.loads(line) for line in samples_file.read_text().splitlines()],
            )
    finally:
        for process in launched.values():
            if process.poll() is None:
                process.kill()
                process.communicate()
    (results_one, samples_one), (results_two, samples_two) = outputs["alone"], outputs["together"]
    assert results_two == results_one and results_one["sample_len"] == 15
    assert [s["doc_id"] for s in samples_two] == list(range(15))
    assert [(s["sent_x_score"], s["sent_y_score"]) for s in samples_two] == [
        (s["sent_x_score"], s["sent_y_score"]) for s in samples_one
    ]


def test_classifiers_default_to_the_processs_own_gpu(monkeypatch):
    import torch

    from lm_eval_bias.scorers import default_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert default_device() == "cuda"
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert default_device() == "cuda:3"
    monkeypatch.setenv("LOCAL_RANK", "4")  # one visible GPU per process: the current one
    assert default_device() == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert default_device() == "cpu"


def test_a_request_too_long_names_the_process_whose_share_has_it():
    from types import SimpleNamespace

    from lm_eval_bias import checks
    from lm_eval_bias.errors import ConfigurationError

    lm = SimpleNamespace(max_length=8, tok_encode=lambda text, **_: list(text), rank=1, world_size=2)
    request = SimpleNamespace(
        request_type="loglikelihood", args=("", "a sentence longer than eight"), doc={"pair_id": "7"}
    )
    task = SimpleNamespace(instances=[request], task_name="winoqueer")
    with pytest.raises(
        ConfigurationError,
        match=r"^winoqueer: 1 of its 1 requests \(process 1 of 2: its share "
        r"of the documents\) do not fit the model's context of 8 tokens",
    ):
        checks.check_requests_fit(task, lm)
