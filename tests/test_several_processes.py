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
            env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank),
                       WORLD_SIZE=str(world_size), LOCAL_WORLD_SIZE=str(world_size), ACCELERATE_USE_CPU="true")
        log = open(workdir / f"log_{world_size}_{rank}.txt", "w")
        processes.append((subprocess.Popen([sys.executable, str(WORKER), str(spec_file)], cwd=workdir, env=env,
                                           stdout=log, stderr=subprocess.STDOUT), log))
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


@pytest.fixture(scope="module")
def pair_file(tmp_path_factory, winoqueer_dir):
    """The head sample (whose "Straight people are sinful." is split at two different words, so
    the hf backend's logits cache makes WinoQueer send sentence prefixes) and every 1000th pair
    of the gender subset."""
    rows = []
    with open(winoqueer_dir / "winoqueer_head_sample.csv", encoding="utf-8-sig", newline="") as f:
        rows += list(csv.DictReader(f))
    with open(winoqueer_dir / "winoqueer_gender_subset.csv", encoding="utf-8-sig", newline="") as f:
        rows += list(csv.DictReader(f))[::1000]
    # one of those repeats a head-sample pair, and a repeated pair is an error
    rows = list({(row["Gender_ID_x"], row["Gender_ID_y"], row["sent_x"], row["sent_y"]): row for row in rows}.values())
    # one Nonbinary pair: its subgroup's metrics exist on one rank only
    nonbinary = [index for index, row in enumerate(rows) if row["Gender_ID_x"] == "NB"]
    assert len(nonbinary) >= 1
    rows = [row for index, row in enumerate(rows) if index not in nonbinary[1:]]
    path = tmp_path_factory.mktemp("pairs") / "pairs.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["", "Gender_ID_x", "Gender_ID_y", "sent_x", "sent_y"])
        for index, row in enumerate(rows):
            writer.writerow([index, row["Gender_ID_x"], row["Gender_ID_y"], row["sent_x"], row["sent_y"]])
    return path


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory, winoqueer_dir):
    from tiny_models import build_tiny_bert, winoqueer_sentences

    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), winoqueer_sentences())


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_gpt2_long_context, tiny_bert, tiny_detoxify, pair_file, winoqueer_dir):
    """One process and two, started together: ``(one process's runs, rank 0's runs)``."""
    checkpoint, config_dir = tiny_detoxify["original"]
    generation = {"data_dir": str(winoqueer_dir.parent), "detoxify_checkpoint": str(checkpoint),
                  "detoxify_config_dir": str(config_dir)}
    spec = {"classifier_batch_size": 1, "runs": [
        {"model": "hf", "pretrained": str(tiny_gpt2_long_context), "tasks": ["winoqueer"],
         "metadata": {"data_file": str(pair_file)}},
        # 5 documents: rank 0 gets 3, rank 1 gets 2 and pads its requests with a copy of its last
        # one (gendercare_genderpair's, the last task), whose extra generation must not be scored
        {"model": "hf", "pretrained": str(tiny_gpt2_long_context), "limit": 5, "gen_kwargs": "max_gen_toks=6",
         "tasks": ["tango_misgender", "gendercare_genderpair"], "metadata": generation},
        {"model": "hf-mlm", "pretrained": str(tiny_bert), "tasks": ["winoqueer_mlm"],
         "metadata": {"data_file": str(pair_file)}},
    ]}
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
    # the sentence-prefix form (empty contexts), chosen for the whole run from the head sample's pairs
    assert all(arguments[0] == "" for sample in winoqueer["samples"]["winoqueer"]
               for arguments in sample["arguments"])
    assert alone[1]["results"]["gendercare_genderpair"]["sample_len"] == 5


@pytest.mark.parametrize("index, task", [(0, "winoqueer"), (1, "tango_misgender"), (1, "gendercare_genderpair"),
                                         (2, "winoqueer_mlm")])
def test_rank_0_reports_what_one_process_reports(runs, index, task):
    alone, together = (run[index] for run in runs)
    one, two = alone["results"][task], together["results"][task]
    assert set(two) == set(one)
    assert two["sample_len"] == one["sample_len"]
    assert together["n-samples"][task] == alone["n-samples"][task]
    tolerance = SCORE_TOLERANCE if task == "winoqueer" else 0
    for key, value in one.items():
        if isinstance(value, float) and tolerance:
            assert two[key] == pytest.approx(value, rel=tolerance, abs=tolerance), key
        else:
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
