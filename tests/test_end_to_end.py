"""Real lm-eval runs of ``winoqueer`` with a tiny GPT-2, through every way to run it.

Every run uses a working directory outside the repository, so the tasks must
come from the installed package.
"""

import csv
import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import lm_eval_bias
import lm_eval_bias.cache_key
import lm_eval_bias.cli
from lm_eval_bias import stats, task_metadata
from lm_eval_bias.benchmarks.winoqueer import scoring as wq
from lm_eval_bias.benchmarks.winoqueer.record import subgroup_slug
from winoqueer_reference import plugin_scored_tokens, reference_pair_score, scored_after_identity, write_pairs_file

pytestmark = pytest.mark.e2e  # runs the package end to end: `pytest -m "not slow"` includes it

BIN = Path(sys.executable).parent
N_PAIRS = 241
SUBGROUPS_IN_SLICE = {"LGBTQ", "Queer", "Transgender", "Nonbinary", "Bisexual", "Pansexual", "Lesbian", "Asexual"}


def strict_json(path):
    def no_nan(token):
        raise AssertionError(f"{path} contains a bare {token}")

    return json.loads(Path(path).read_text(), parse_constant=no_nan)


def run(args, cwd, timeout=600):
    completed = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-6000:]
    return completed


@pytest.fixture(scope="module")
def pair_slice(tmp_path_factory, winoqueer_dir):
    """All 42 head-sample pairs plus every 80th pair of the gender subset (241 pairs: one of them
    is also in the head sample, and a repeated pair is an error)."""
    rows = []
    with open(winoqueer_dir / "winoqueer_head_sample.csv", encoding="utf-8-sig", newline="") as f:
        rows += list(csv.DictReader(f))
    with open(winoqueer_dir / "winoqueer_gender_subset.csv", encoding="utf-8-sig", newline="") as f:
        rows += list(csv.DictReader(f))[::80][:200]
    seen, unique = set(), []
    for row in rows:
        key = (row["Gender_ID_x"], row["Gender_ID_y"], row["sent_x"], row["sent_y"])
        if key not in seen:
            seen.add(key)
            unique.append(row)
    rows = unique
    assert len(rows) == N_PAIRS
    path = tmp_path_factory.mktemp("data") / "slice.csv"
    write_pairs_file(path, rows)
    return path


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory, tiny_gpt2, pair_slice):
    """One ``lm-eval-bias`` run with samples logged and a --use_cache path."""
    workdir = tmp_path_factory.mktemp("run")
    run(
        [
            str(BIN / "lm-eval-bias"),
            "run",
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_gpt2},dtype=float32",
            "--device",
            "cpu",
            "--batch_size",
            "16",
            "--tasks",
            "winoqueer",
            "--metadata",
            json.dumps({"data_file": str(pair_slice)}),
            "--output_path",
            str(workdir / "out"),
            "--log_samples",
            "--use_cache",
            str(workdir / "cache" / "lm"),
        ],
        cwd=workdir,
    )
    results_file = next((workdir / "out").rglob("results_*.json"))
    samples_file = next((workdir / "out").rglob("samples_winoqueer_*.jsonl"))
    samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
    return {"workdir": workdir, "results": strict_json(results_file), "samples": samples, "samples_file": samples_file}


@pytest.fixture(scope="module")
def one_request_run(tmp_path_factory, tiny_gpt2, winoqueer_dir):
    """Every 80th pair of the gender subset (200 pairs, no sentence split at two words): one
    request per sentence."""
    with open(winoqueer_dir / "winoqueer_gender_subset.csv", encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))[::80][:200]
    workdir = tmp_path_factory.mktemp("one-request")
    data_file = workdir / "pairs.csv"
    write_pairs_file(data_file, rows)
    run(
        [
            str(BIN / "lm-eval-bias"),
            "run",
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_gpt2},dtype=float32",
            "--device",
            "cpu",
            "--batch_size",
            "16",
            "--tasks",
            "winoqueer",
            "--metadata",
            json.dumps({"data_file": str(data_file)}),
            "--output_path",
            str(workdir / "out"),
            "--log_samples",
        ],
        cwd=workdir,
    )
    samples_file = next((workdir / "out").rglob("samples_winoqueer_*.jsonl"))
    return {
        "samples": [json.loads(line) for line in samples_file.read_text().splitlines()],
        "results": strict_json(next((workdir / "out").rglob("results_*.json"))),
    }


@pytest.fixture(scope="module")
def prefix_form_run(tiny_gpt2, pair_slice):
    """The head sample scored as sentence prefixes with empty contexts, the form used where the
    backend cannot write its prefix token as text (made so here by hiding it)."""
    from lm_eval_bias import checks

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checks, "prefix_token_text", lambda lm: None)
        out = lm_eval_bias.simple_evaluate(
            model="hf",
            model_args=f"pretrained={tiny_gpt2},dtype=float32",
            device="cpu",
            batch_size=16,
            tasks=["winoqueer"],
            log_samples=True,
            task_manager=lm_eval_bias.task_manager(metadata={"data_file": str(pair_slice)}),
        )
    samples = out["samples"]["winoqueer"]
    assert len(samples) == N_PAIRS
    assert all(context == "" for sample in samples for context, _ in (req for req in sample["arguments"]))
    return {"samples": samples}


def test_one_request_per_sentence_where_the_tokenizer_allows(one_request_run, tiny_gpt2):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2)
    bos = tokenizer.decode([tokenizer.bos_token_id])
    assert bos == "<|endoftext|>"
    samples = one_request_run["samples"]
    assert len(samples) == 200
    for sample in samples:
        x, y = sample["doc"]["sent_x"], sample["doc"]["sent_y"]
        spans = wq.scored_spans(x, y)
        (start_x, _), (start_y, _) = spans.x[0], spans.y[0]
        requests = [(arg["arg_0"], arg["arg_1"]) for arg in sample["arguments"].values()]
        # BOS as text and the words before the scored span, then the rest of the sentence
        assert requests == [(bos + x[:start_x], x[start_x:]), (bos + y[:start_y], y[start_y:])]
        (score_x,), (score_y,) = ([float(value) for value, _ in resp] for resp in sample["resps"])
        assert (sample["sent_x_score"], sample["sent_y_score"]) == (score_x, score_y)


def test_results_json_has_every_subgroup_with_stderr_and_interval(cli_run):
    results = cli_run["results"]["results"]["winoqueer"]
    assert results["sample_len"] == N_PAIRS
    for name in ["bias_score"] + [f"bias_score_{subgroup_slug(g)}" for g in SUBGROUPS_IN_SLICE]:
        value = results[f"{name},none"]
        assert 0 <= results[f"{name}_ci_lower,none"] <= value <= results[f"{name}_ci_upper,none"] <= 100
        assert isinstance(results[f"{name}_stderr,none"], float)
    assert "bias_score_gay,none" not in results  # no Gay pairs in the slice: absent, not NaN


def test_results_are_recomputable_from_the_logged_pair_scores(cli_run):
    results = cli_run["results"]["results"]["winoqueer"]
    samples = cli_run["samples"]
    assert len(samples) == N_PAIRS
    outcomes, ties = Counter(), Counter()
    counts = Counter()
    # each pair's outcome with its template's cluster id: the intervals and tests take templates as units
    clustered: dict[str, list] = {}
    identity = task_metadata.shipped_identity("winoqueer")
    for sample in samples:
        stereotyped, tie = wq.pair_outcome(sample["sent_x_score"], sample["sent_y_score"])
        assert sample["bias_score"] == (100.0 if stereotyped else 0.0)
        template = identity.cluster_id({"template": wq.template_of(sample["doc"]["sent_x"], sample["doc"]["sent_y"])})
        for key in ("all", sample["doc"]["subgroup"]):
            outcomes[key] += stereotyped
            ties[key] += tie
            counts[key] += 1
            clustered.setdefault(key, []).append((100.0 if stereotyped else 0.0, template))
        # one request per sentence: BOS as text, then the words before the scored span
        assert [arg["arg_0"][:13] for arg in sample["arguments"].values()] == ["<|endoftext|>"] * 2
    # The head sample splits "Straight people are sinful." after "Straight" in one pair and after
    # "Straight people" in another, which lm-eval's hf logits cache alone would mix up (the
    # request gate scores them in rounds; test_plugin_agrees_with_the_token_by_token_reference
    # checks every pair's scores).
    requests = {(arg["arg_0"], arg["arg_1"]) for sample in samples for arg in sample["arguments"].values()}
    assert {
        ("<|endoftext|>Straight", " people are sinful."),
        ("<|endoftext|>Straight people", " are sinful."),
    } <= requests
    assert results["bias_score,none"] == pytest.approx(100 * outcomes["all"] / N_PAIRS)
    assert results["tie_pct,none"] == pytest.approx(100 * ties["all"] / N_PAIRS)
    low, high = stats.percent_interval(clustered["all"], value_range=(0.0, 100.0))
    assert (results["bias_score_ci_lower,none"], results["bias_score_ci_upper,none"]) == (
        pytest.approx(low),
        pytest.approx(high),
    )
    signs = {
        key: [(1 if outcome else -1, template) for outcome, template in values] for key, values in clustered.items()
    }
    raw = {group: stats.sign_test_pvalue(signs[group], value_range=(-1.0, 1.0)) for group in SUBGROUPS_IN_SLICE}
    adjusted = dict(zip(sorted(raw), stats.benjamini_hochberg([raw[g] for g in sorted(raw)])))
    for group in SUBGROUPS_IN_SLICE:
        slug = subgroup_slug(group)
        assert results[f"bias_score_{slug},none"] == pytest.approx(100 * outcomes[group] / counts[group])
        low, high = stats.percent_interval(clustered[group], value_range=(0.0, 100.0))
        assert results[f"bias_score_{slug}_ci_upper,none"] == pytest.approx(high)
        assert results[f"bias_score_{slug}_pvalue,none"] == pytest.approx(raw[group])
        assert results[f"bias_score_{slug}_pvalue_bh,none"] == pytest.approx(adjusted[group])


def test_cache_file_is_specific_to_the_model(cli_run, tiny_gpt2):
    databases = list((cli_run["workdir"] / "cache").glob("*.db"))
    assert len(databases) == 1
    expected = lm_eval_bias.cache_key.model_specific_cache_path(
        str(cli_run["workdir"] / "cache" / "lm"), "hf", {"pretrained": str(tiny_gpt2), "dtype": "float32"}
    )
    assert databases[0].name.startswith(Path(expected).name)
    assert "tiny-gpt2" in databases[0].name


@pytest.mark.parametrize("run_name", ["cli_run", "one_request_run", "prefix_form_run"])
def test_plugin_agrees_with_the_token_by_token_reference(run_name, request, tiny_gpt2):
    """Pair by pair against the authors' method, with the model's own tokenizer.

    Where both methods score the same tokens, the score differences must match;
    every disagreement must be a pair where they score different tokens.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2)
    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2, dtype=torch.float32).eval()
    samples = request.getfixturevalue(run_name)["samples"]
    agree = same_tokens = 0
    for sample in samples:
        x, y = sample["doc"]["sent_x"], sample["doc"]["sent_y"]
        reference = reference_pair_score(model, tokenizer, x, y)
        spans = wq.scored_spans(x, y)
        (tokens_x, unstable_x), (tokens_y, unstable_y) = (
            plugin_scored_tokens(tokenizer, x, spans.x),
            plugin_scored_tokens(tokenizer, y, spans.y),
        )
        assert unstable_x == unstable_y == 0, (x, y)
        ours_tokens = (tokens_x, tokens_y)
        ours_diff = sample["sent_x_score"] - sample["sent_y_score"]
        reference_diff = reference.score_x - reference.score_y
        ours_outcome = wq.pair_outcome(sample["sent_x_score"], sample["sent_y_score"])[0]
        reference_outcome = wq.pair_outcome(reference.score_x, reference.score_y)[0]
        if ours_tokens == scored_after_identity(reference):
            same_tokens += 1
            assert ours_diff == pytest.approx(reference_diff, abs=1e-3), (x, y)
            if abs(reference_diff) > 2e-3:
                assert ours_outcome == reference_outcome, (x, y)
        agree += ours_outcome == reference_outcome
    assert same_tokens >= 0.9 * len(samples)
    assert agree >= 0.95 * len(samples)


def test_stock_cli_with_include_path(tmp_path, tiny_gpt2, pair_slice):
    tasks = run([sys.executable, "-m", "lm_eval_bias", "tasks-dir"], cwd=tmp_path).stdout.strip()
    assert (Path(tasks) / "winoqueer" / "winoqueer.yaml").is_file()
    run(
        [
            str(BIN / "lm_eval"),
            "run",
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_gpt2},dtype=float32",
            "--device",
            "cpu",
            "--tasks",
            "winoqueer",
            "--include_path",
            tasks,
            "--limit",
            "10",
            "--metadata",
            json.dumps({"data_file": str(pair_slice)}),
            "--output_path",
            str(tmp_path / "out.json"),
        ],
        cwd=tmp_path,
    )
    results = strict_json(next(tmp_path.glob("out_*.json")))["results"]["winoqueer"]
    assert results["sample_len"] == 10
    assert "bias_score,none" in results


def test_python_api_with_task_manager(tiny_gpt2, pair_slice):
    import lm_eval

    output = lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_gpt2},dtype=float32",
        tasks=["winoqueer"],
        # with a task_manager given, lm-eval reads task metadata from it, not from metadata=
        task_manager=lm_eval_bias.task_manager(metadata={"data_file": str(pair_slice)}),
        limit=12,
        device="cpu",
    )
    results = output["results"]["winoqueer"]
    assert results["sample_len"] == 12
    assert not math.isnan(results["bias_score,none"])


def test_ls_and_validate_see_our_tasks_beside_a_users_own(tmp_path):
    user_dir = tmp_path / "user_tasks"
    user_dir.mkdir()
    (user_dir / "mine.yaml").write_text(
        "task: my_own_task\ndataset_path: json\n"
        f"dataset_kwargs: {{data_files: {{test: {tmp_path / 'x.jsonl'}}}}}\n"
        "test_split: test\noutput_type: loglikelihood\ndoc_to_text: a\ndoc_to_target: b\n"
    )
    listing = run([str(BIN / "lm-eval-bias"), "ls", "tasks"], cwd=tmp_path).stdout
    assert "winoqueer" in listing
    validated = run(
        [str(BIN / "lm-eval-bias"), "validate", "--tasks", "winoqueer,my_own_task", "--include_path", str(user_dir)],
        cwd=tmp_path,
    )
    assert "not found" not in (validated.stdout + validated.stderr).lower()


def test_entry_point_resolves_to_the_tasks_directory():
    from importlib import import_module
    from importlib.metadata import entry_points

    (entry,) = [e for e in entry_points(group="lm_eval.tasks") if e.name == "lm_eval_bias"]
    package = import_module(entry.value)
    assert (Path(package.__file__).parent / "winoqueer" / "winoqueer.yaml").is_file()
    assert Path(package.__file__).parent == Path(lm_eval_bias.tasks_dir())


def test_results_recomputed_from_the_sample_log(cli_run, tmp_path):
    from lm_eval_bias.report.recompute import recompute

    recomputed = recompute(cli_run["samples_file"])
    reported = {k: v for k, v in cli_run["results"]["results"]["winoqueer"].items() if "," in k}
    assert set(recomputed) == set(reported)
    for key, value in reported.items():
        assert recomputed[key] == (pytest.approx(value) if isinstance(value, float) else value), key
    out = tmp_path / "recomputed.json"
    assert lm_eval_bias.cli._recompute([str(cli_run["samples_file"]), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["bias_score,none"] == pytest.approx(reported["bias_score,none"])
    assert lm_eval_bias.cli._recompute([str(tmp_path / "samples_nope_2026-01-01T00-00-00.jsonl")]) == 2


def test_check_and_leaderboard_on_this_run(cli_run, capsys):
    """The gate and the leaderboard read the results file lm-eval-bias just wrote."""
    out = cli_run["workdir"] / "out"
    score = cli_run["results"]["results"]["winoqueer"]["bias_score,none"]
    upper = cli_run["results"]["results"]["winoqueer"]["bias_score_ci_upper,none"]
    assert lm_eval_bias.cli._check([str(out), "--max", f"winoqueer={score + 0.01}"]) == 0
    assert lm_eval_bias.cli._check([str(out), "--max", f"winoqueer={score + 0.01}", "--gate", "interval"]) == (
        0 if upper <= score + 0.01 else 1
    )
    assert lm_eval_bias.cli._check([str(out), "--max", f"winoqueer={score - 0.01}"]) == 1
    capsys.readouterr()
    assert lm_eval_bias.cli._leaderboard([str(out)]) == 0
    board = capsys.readouterr().out
    assert f"{score:.4g} [" in board and "winoqueer:bias_score_lgbtq" in board
