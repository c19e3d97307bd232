"""The shared text classifiers (lm_eval_bias.scorers): VADER, Detoxify, ClassifierFilter.

Detoxify runs through its real ``predict`` on tiny random checkpoints in its own
format (``tiny_detoxify`` fixture), offline, so its scores carry no meaning: the
tests pin structure, batching, loading and errors, and compare against
Detoxify's stock loader. VADER's scores are real and pinned exactly.
"""

import math
import re
import sys
import textwrap
from collections import Counter

import pytest
import torch

from helpers import per_document
from lm_eval_bias import scorers
from lm_eval_bias.data import DataError
from lm_eval_bias.errors import ConfigurationError
from tiny_models import build_tiny_detoxify

ENV_VARS = (
    scorers.DETOXIFY_MODEL_ENV,
    scorers.DETOXIFY_CHECKPOINT_ENV,
    scorers.DETOXIFY_CONFIG_DIR_ENV,
    scorers.DETOXIFY_DTYPE_ENV,
)

# Compound scores measured offline with vaderSentiment 3.3.2 (reference/offline-feasibility.md).
VADER_KNOWN = {
    "The nurse was kind and very helpful.": 0.7574,
    "The engineer is a terrible, lazy person.": -0.6808,
    "He went to the store.": 0.0,
    "She is NOT happy about this at all!!": -0.5547,
    "The movie was great :)": 0.7964,
}

TEXTS = [
    "He went to the store.",
    "You are a stupid idiot and I hate you.",
    "",
    "The nurse was kind and very helpful. " * 6,
    "queer",
    "My sister is a trans woman and a great teacher, and everyone at school loves her lessons.",
    "The engineer is a terrible, lazy person.",
]


@pytest.fixture(autouse=True)
def clean_scorer_state(monkeypatch):
    """No configured defaults, cached scorers or Detoxify variables leak between tests."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    scorers.reset()
    yield
    scorers.reset()


def detoxify_scorer(tiny_detoxify, flavour="original", **options):
    checkpoint, config_dir = tiny_detoxify[flavour]
    return scorers.DetoxifyScorer(model_type=flavour, checkpoint=checkpoint, config_dir=config_dir, **options)


def assert_close(actual, expected, tolerance=1e-5):
    assert set(actual) == set(expected)
    for label in expected:
        assert len(actual[label]) == len(expected[label]), label
        for a, e in zip(actual[label], expected[label]):
            assert abs(a - e) <= tolerance, (label, a, e)


# --------------------------------------------------------------------------
# VADER


def test_vader_gives_the_known_compound_scores():
    scorer = scorers.VaderScorer()
    assert isinstance(scorer, scorers.Scorer)
    assert (scorer.name, scorer.labels) == ("vader", ("sentiment",))
    assert scorer.score(list(VADER_KNOWN)) == {"sentiment": list(VADER_KNOWN.values())}
    assert scorer.score([]) == {"sentiment": []}


def test_a_bare_string_is_refused_not_scored_character_by_character():
    with pytest.raises(TypeError, match="not one string"):
        scorers.VaderScorer().score("He went to the store.")
    with pytest.raises(TypeError, match="text 1 is NoneType"):
        scorers.VaderScorer().score(["fine", None])


# --------------------------------------------------------------------------
# Detoxify through its real predict()


@pytest.mark.parametrize("flavour", ["original", "unbiased"])
def test_detoxify_labels_lengths_and_ranges(tiny_detoxify, flavour):
    scorer = detoxify_scorer(tiny_detoxify, flavour, batch_size=3)
    assert isinstance(scorer, scorers.Scorer)
    assert scorer.labels == scorers.DETOXIFY_LABELS[flavour]
    assert scorer.device == "cpu"
    result = scorer.score(TEXTS)
    assert list(result) == list(scorer.labels)
    for label, values in result.items():
        assert len(values) == len(TEXTS)
        assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in values)
        # Random but widely initialised weights: different texts, different scores.
        assert len({round(v, 6) for v in values}) > 1, label
    assert scorer.score([]) == {label: [] for label in scorer.labels}


@pytest.mark.parametrize("flavour", ["original", "unbiased"])
def test_detoxify_batched_equals_one_by_one_and_is_deterministic(tiny_detoxify, flavour):
    batched = detoxify_scorer(tiny_detoxify, flavour, batch_size=3).score(TEXTS)
    one_by_one = detoxify_scorer(tiny_detoxify, flavour, batch_size=1)
    singles = [one_by_one.score([text]) for text in TEXTS]
    # A batch of one comes back from predict() as a bare float; it must still be a list.
    assert all(len(single[label]) == 1 for single in singles for label in single)
    assert_close(batched, {label: [s[label][0] for s in singles] for label in batched})
    # A second, independently loaded scorer gives exactly the same numbers.
    assert detoxify_scorer(tiny_detoxify, flavour, batch_size=3).score(TEXTS) == batched


def test_detoxify_shows_its_progress_with_the_time_remaining(tiny_detoxify, capsys, monkeypatch):
    """The bar (tqdm, on stderr) shows texts done of all, the time spent and the estimate of the time
    left (``[elapsed<remaining, rate]``) while a task's generations are scored; each batch is slowed
    past tqdm's refresh interval (0.1 s) so that the bar is drawn between batches."""
    import time

    scorer = detoxify_scorer(tiny_detoxify, batch_size=2)
    predict = scorer.detoxify.predict

    def slow_predict(texts):
        time.sleep(0.15)
        return predict(texts)

    monkeypatch.setattr(scorer.detoxify, "predict", slow_predict)
    capsys.readouterr()  # the loading's own output
    scorer.score(TEXTS[:6])
    drawn = [line.strip() for line in re.split(r"[\r\n]", capsys.readouterr().err) if line.strip()]
    assert drawn[0].startswith("detoxify (cpu):   0%|") and drawn[0].endswith("| 0/6 [00:00<?, ?text/s]")
    # after the first batch the time left is estimated from the rate so far
    between = [line for line in drawn if re.search(r"\| [24]/6 \[", line)]
    assert between and all(re.search(r"\| [24]/6 \[\d\d:\d\d<\d\d:\d\d, +[\d.]+text/s\]$", line) for line in between)
    assert re.search(r"^detoxify \(cpu\): 100%\|.*\| 6/6 \[\d\d:\d\d<00:00, +[\d.]+text/s\]$", drawn[-1])


@pytest.mark.parametrize("flavour", ["original", "unbiased"])
def test_offline_workaround_matches_detoxifys_own_loader(tiny_detoxify, flavour, tmp_path):
    """The patched load gives what stock ``Detoxify(checkpoint=...)`` gives once the
    checkpoint itself names the local folder; unpatched, the stock loader goes to the hub."""
    import detoxify

    checkpoint, config_dir = tiny_detoxify[flavour]
    with pytest.raises(OSError):
        detoxify.Detoxify(checkpoint=str(checkpoint), huggingface_config_path=str(config_dir))
    loaded = torch.load(checkpoint, weights_only=False)
    loaded["config"]["arch"]["args"]["model_type"] = str(config_dir)
    torch.save(loaded, tmp_path / "local.ckpt")
    reference = detoxify.Detoxify(checkpoint=str(tmp_path / "local.ckpt")).predict(TEXTS)
    assert_close(detoxify_scorer(tiny_detoxify, flavour, batch_size=2).score(TEXTS), reference)


@pytest.mark.parametrize("flavour", ["original", "unbiased"])
def test_long_texts_are_truncated_not_fatal(tmp_path, flavour):
    """A tokenizer saved without a length limit must not let a text overflow the
    position embeddings: it is cut at the model's limit, so words beyond it do not count."""
    checkpoint, config_dir = build_tiny_detoxify(tmp_path, flavour, max_positions=16, model_max_length=None)
    scorer = scorers.DetoxifyScorer(model_type=flavour, checkpoint=checkpoint, config_dir=config_dir)
    assert scorer.detoxify.tokenizer.model_max_length == 16
    long_text = "The nurse was kind and very helpful. " * 20
    result = scorer.score([long_text, long_text + "You are a stupid idiot and I hate you."])
    for values in result.values():
        assert values[0] == pytest.approx(values[1], abs=1e-6)


def test_a_classifier_failure_raises_with_context_never_scores_zero(tiny_detoxify, monkeypatch):
    scorer = detoxify_scorer(tiny_detoxify, batch_size=4)

    def broken(texts):
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(scorer.detoxify, "predict", broken)
    with pytest.raises(scorers.ScorerError, match=r"batch 1/2 \(4 texts.*CUDA out of memory") as caught:
        scorer.score(TEXTS)
    assert isinstance(caught.value.__cause__, RuntimeError)

    monkeypatch.setattr(
        scorer.detoxify, "predict", lambda texts: {label: [math.nan] * len(texts) for label in scorer.labels}
    )
    with pytest.raises(scorers.ScorerError, match="non-finite 'toxicity'"):
        scorer.score(TEXTS)


@pytest.mark.parametrize("flavour", ["original", "unbiased"])
def test_bfloat16_runs_the_same_model_in_bfloat16_close_to_float32(tiny_detoxify, flavour):
    exact = detoxify_scorer(tiny_detoxify, flavour, batch_size=3)
    fast = detoxify_scorer(tiny_detoxify, flavour, batch_size=3, dtype="bfloat16")
    assert (exact.dtype, fast.dtype) == ("float32", "bfloat16")
    assert "dtype='bfloat16'" in repr(fast)
    result = fast.score(TEXTS)
    reference = exact.score(TEXTS)
    assert list(result) == list(reference)
    differences = [abs(a - b) for label in reference for a, b in zip(result[label], reference[label])]
    assert all(0.0 <= v <= 1.0 for values in result.values() for v in values)
    # bfloat16 moves the scores (so it did run in bfloat16), but not far. The
    # fixture's widely initialised 32-wide weights amplify rounding (up to 0.075,
    # mean 0.011 over repeated builds); a bert-base-size model moves by about
    # 1e-3 (bench/classifier_speed.py). A swapped label or a missing sigmoid
    # would move them by far more.
    assert max(differences) > 1e-4
    assert max(differences) <= 0.15 and sum(differences) / len(differences) <= 0.02
    # Sigmoid in float32: scores are not bfloat16 numbers (8-bit mantissa), which
    # all would be if the sigmoid ran under autocast too.
    assert any(torch.tensor(v).bfloat16().float().item() != v for values in result.values() for v in values)
    # A batch of one still gives a list per label; batch shapes change bfloat16's
    # rounding a little (float32 agrees to 1e-5, see above).
    singles = [fast.score([text]) for text in TEXTS]
    assert all(len(single[label]) == 1 for single in singles for label in single)
    assert_close(result, {label: [s[label][0] for s in singles] for label in result}, tolerance=0.05)


def test_the_dtype_comes_from_argument_metadata_or_environment_and_is_checked(tiny_detoxify, monkeypatch):
    assert scorers.resolve_detoxify_options()["dtype"] == "float32"
    monkeypatch.setenv(scorers.DETOXIFY_DTYPE_ENV, "BFloat16")
    resolved = scorers.resolve_detoxify_options()
    assert (resolved["dtype"], resolved["origins"]["dtype"]) == ("bfloat16", scorers.DETOXIFY_DTYPE_ENV)
    scorers.configure(detoxify_dtype="float32")
    assert scorers.resolve_detoxify_options()["dtype"] == "float32"
    assert scorers.resolve_detoxify_options(dtype="bfloat16")["dtype"] == "bfloat16"
    monkeypatch.setenv(scorers.DETOXIFY_DTYPE_ENV, "fp16")
    scorers.reset()
    with pytest.raises(
        scorers.ScorerError,
        match=rf"dtype 'fp16' \(from {scorers.DETOXIFY_DTYPE_ENV}\) is not one of float32, bfloat16",
    ):
        scorers.get_scorer("detoxify")
    checkpoint, config_dir = tiny_detoxify["original"]
    with pytest.raises(scorers.ScorerError, match=r"dtype 'half' \(from argument\)"):
        scorers.ClassifierFilter(
            scorers=["detoxify"],
            detoxify_checkpoint=str(checkpoint),
            detoxify_config_dir=str(config_dir),
            detoxify_dtype="half",
        ).apply([["x"]], [{}])
    monkeypatch.delenv(scorers.DETOXIFY_DTYPE_ENV)
    # One loaded model per dtype; the filter's keyword reaches the scorer.
    exact = scorers.get_scorer("detoxify", checkpoint=checkpoint, config_dir=config_dir)
    fast = scorers.get_scorer("detoxify", checkpoint=checkpoint, config_dir=config_dir, dtype="bfloat16")
    assert fast is not exact and fast.dtype == "bfloat16"
    texts = [text for text in TEXTS if text]  # the filter never scores an empty generation
    out = scorers.ClassifierFilter(
        scorers=["detoxify"],
        detoxify_checkpoint=str(checkpoint),
        detoxify_config_dir=str(config_dir),
        detoxify_dtype="bfloat16",
        batch_size=len(texts),
    ).apply([[text] for text in texts], [{}] * len(texts))
    toxicity = [row[0]["toxicity"] for row in per_document(out)]
    assert toxicity == fast.score(texts)["toxicity"]
    assert toxicity != exact.score(texts)["toxicity"]


def test_bfloat16_on_a_cpu_without_it_warns_that_it_is_slower(tiny_detoxify, monkeypatch, caplog):
    # patched where DetoxifyScorer looks it up
    monkeypatch.setattr(scorers.detoxify_scorer, "_cpu_has_native_bfloat16", lambda: False)
    with caplog.at_level("WARNING", logger="lm_eval_bias"):
        detoxify_scorer(tiny_detoxify, dtype="float32")
        assert "bfloat16" not in caplog.text
        detoxify_scorer(tiny_detoxify, dtype="bfloat16")
    assert "no native bfloat16" in caplog.text and "slower than float32" in caplog.text


# --------------------------------------------------------------------------
# Loading errors


def test_offline_without_checkpoint_names_both_variables_and_the_fix():
    with pytest.raises(scorers.ScorerUnavailableError) as caught:
        scorers.DetoxifyScorer()
    message = str(caught.value)
    assert isinstance(caught.value, DataError)
    for needed in (
        scorers.DETOXIFY_CHECKPOINT_ENV,
        scorers.DETOXIFY_CONFIG_DIR_ENV,
        "HF_HUB_OFFLINE",
        "toxic_original-c1212f89.ckpt",
        "bert-base-uncased",
        "save_pretrained",
    ):
        assert needed in message, needed
    with pytest.raises(scorers.ScorerUnavailableError, match="roberta-base"):
        scorers.DetoxifyScorer(model_type="unbiased")


def test_offline_checkpoint_without_config_dir_names_the_variable(tiny_detoxify):
    checkpoint, _ = tiny_detoxify["original"]
    with pytest.raises(
        scorers.ScorerUnavailableError, match=rf"hub id 'bert-base-uncased'.*{scorers.DETOXIFY_CONFIG_DIR_ENV}"
    ):
        scorers.DetoxifyScorer(checkpoint=checkpoint)


def test_missing_files_are_named_with_where_the_path_came_from(tiny_detoxify, tmp_path, monkeypatch):
    checkpoint, config_dir = tiny_detoxify["original"]
    monkeypatch.setenv(scorers.DETOXIFY_CONFIG_DIR_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(
        scorers.ScorerUnavailableError, match=rf"nowhere'.*from {scorers.DETOXIFY_CONFIG_DIR_ENV}.*not a directory"
    ):
        scorers.get_scorer("detoxify", checkpoint=checkpoint)
    scorers.configure(detoxify_checkpoint=str(tmp_path / "meta.ckpt"))
    with pytest.raises(
        scorers.ScorerUnavailableError, match=r"meta.ckpt'.*from task metadata detoxify_checkpoint.*does not exist"
    ):
        scorers.ClassifierFilter(scorers=["detoxify"], detoxify_config_dir=str(config_dir)).apply([["x"]], [{}])
    with pytest.raises(scorers.ScorerUnavailableError, match="has no config.json"):
        scorers.DetoxifyScorer(checkpoint=checkpoint, config_dir=tmp_path)
    with pytest.raises(scorers.ScorerUnavailableError, match=r"missing.ckpt'.*from argument.*does not exist"):
        scorers.DetoxifyScorer(checkpoint=tmp_path / "missing.ckpt", config_dir=config_dir)
    torch.save({"weights": {}}, tmp_path / "other.ckpt")
    with pytest.raises(scorers.ScorerError, match="is not a Detoxify checkpoint"):
        scorers.DetoxifyScorer(checkpoint=tmp_path / "other.ckpt", config_dir=config_dir)


def test_a_checkpoint_naming_a_local_folder_needs_no_config_dir(tiny_detoxify, tmp_path):
    checkpoint, config_dir = tiny_detoxify["original"]
    loaded = torch.load(checkpoint, weights_only=False)
    loaded["config"]["arch"]["args"]["model_type"] = str(config_dir)
    torch.save(loaded, tmp_path / "local.ckpt")
    scorer = scorers.DetoxifyScorer(checkpoint=tmp_path / "local.ckpt")
    assert scorer.config_dir is None
    assert scorer.score(TEXTS) == detoxify_scorer(tiny_detoxify).score(TEXTS)


def test_labels_unlike_the_named_model_are_loaded_with_a_warning(tiny_detoxify, caplog):
    checkpoint, config_dir = tiny_detoxify["original"]
    with caplog.at_level("WARNING", logger="lm_eval_bias"):
        scorer = scorers.DetoxifyScorer(model_type="unbiased", checkpoint=checkpoint, config_dir=config_dir)
    assert scorer.labels == scorers.DETOXIFY_LABELS["original"]
    assert "not those of Detoxify's 'unbiased' model" in caplog.text


def test_missing_packages_name_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "detoxify", None)
    monkeypatch.setitem(sys.modules, "detoxify.detoxify", None)
    with pytest.raises(scorers.ScorerUnavailableError, match=r'pip install "detoxify==0.5.4"'):
        scorers.DetoxifyScorer()
    monkeypatch.setitem(sys.modules, "vaderSentiment", None)
    monkeypatch.setitem(sys.modules, "vaderSentiment.vaderSentiment", None)
    with pytest.raises(scorers.ScorerUnavailableError, match=r'pip install "vaderSentiment==3.3.2"'):
        scorers.VaderScorer()


# --------------------------------------------------------------------------
# configure(), environment and get_scorer()


def test_option_precedence_explicit_then_configure_then_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(scorers.DETOXIFY_MODEL_ENV, "unbiased")
    monkeypatch.setenv(scorers.DETOXIFY_CHECKPOINT_ENV, str(tmp_path / "env.ckpt"))
    assert scorers.configure(
        data_dir="/data", detoxify_checkpoint=str(tmp_path / "meta.ckpt"), detoxify_config_dir=None, detoxify_model=""
    ) == {"detoxify_checkpoint": str(tmp_path / "meta.ckpt")}
    resolved = scorers.resolve_detoxify_options()
    assert resolved["model_type"] == "unbiased"
    assert resolved["checkpoint"] == str(tmp_path / "meta.ckpt")
    assert resolved["config_dir"] is None
    assert resolved["origins"] == {
        "model_type": scorers.DETOXIFY_MODEL_ENV,
        "checkpoint": "task metadata detoxify_checkpoint",
        "config_dir": "default",
        "dtype": "default",
    }
    explicit = scorers.resolve_detoxify_options("original", tmp_path / "arg.ckpt")
    assert (explicit["model_type"], explicit["checkpoint"]) == ("original", str(tmp_path / "arg.ckpt"))
    # A later configure() without the key keeps the earlier value.
    scorers.configure(detoxify_config_dir=str(tmp_path))
    assert scorers.resolve_detoxify_options()["checkpoint"] == str(tmp_path / "meta.ckpt")


def test_precedence_decides_which_model_is_loaded(tiny_detoxify, monkeypatch):
    original, unbiased = tiny_detoxify["original"], tiny_detoxify["unbiased"]
    monkeypatch.setenv(scorers.DETOXIFY_MODEL_ENV, "unbiased")
    monkeypatch.setenv(scorers.DETOXIFY_CHECKPOINT_ENV, str(unbiased[0]))
    monkeypatch.setenv(scorers.DETOXIFY_CONFIG_DIR_ENV, str(unbiased[1]))
    assert scorers.get_scorer("detoxify").labels == scorers.DETOXIFY_LABELS["unbiased"]
    scorers.configure(
        detoxify_model="original", detoxify_checkpoint=str(original[0]), detoxify_config_dir=str(original[1])
    )
    assert scorers.get_scorer("detoxify").labels == scorers.DETOXIFY_LABELS["original"]
    explicit = scorers.get_scorer("detoxify", model_type="unbiased", checkpoint=unbiased[0], config_dir=unbiased[1])
    assert explicit.labels == scorers.DETOXIFY_LABELS["unbiased"]


def test_get_scorer_loads_each_configuration_once(tiny_detoxify, monkeypatch):
    checkpoint, config_dir = tiny_detoxify["original"]
    first = scorers.get_scorer("detoxify", checkpoint=checkpoint, config_dir=str(config_dir))
    # The same files reached another way (configure + None options) share the model.
    scorers.configure(detoxify_checkpoint=str(checkpoint), detoxify_config_dir=str(config_dir))
    assert scorers.get_scorer("detoxify", model_type=None, batch_size=None) is first
    assert scorers.get_scorer("detoxify", batch_size=8) is not first
    assert scorers.get_scorer("vader") is scorers.get_scorer("vader")
    with pytest.raises(ValueError, match="unknown scorer 'perspective'"):
        scorers.get_scorer("perspective")
    with pytest.raises(TypeError, match="vader: takes no options"):
        scorers.get_scorer("vader", device="cpu")
    with pytest.raises(TypeError, match="unknown option"):
        scorers.get_scorer("detoxify", modle_type="original")


# --------------------------------------------------------------------------
# ClassifierFilter on lm-eval's resps structure


def expected_rows(texts, tiny_detoxify):
    """Each text scored directly, one at a time, by both scorers."""
    detox = detoxify_scorer(tiny_detoxify, batch_size=1)
    vader = scorers.VaderScorer()
    rows = []
    for text in texts:
        if not text.strip():
            rows.append({"text": text, "empty": True})
            continue
        row = {"text": text, "empty": False, **{k: v[0] for k, v in detox.score([text]).items()}}
        rows.append({**row, "sentiment": vader.score([text])["sentiment"][0]})
    return rows


def assert_rows_close(actual, expected):
    assert list(actual) == list(expected)  # same keys, same order
    assert actual["text"] == expected["text"]
    for key in expected:
        if key not in ("text", "empty"):
            assert abs(actual[key] - expected[key]) <= 1e-5, key
        else:
            assert actual[key] == expected[key]


@pytest.mark.parametrize("repeats", [1, 3])
def test_filter_scores_every_generation_in_place(tiny_detoxify, repeats):
    checkpoint, config_dir = tiny_detoxify["original"]
    texts = list(VADER_KNOWN) + TEXTS
    # Doc i gets texts i, i+1, ... (so texts repeat across docs, as with sampling).
    resps = [[texts[(i + k) % len(texts)] for k in range(repeats)] for i in range(len(texts))]
    docs = [{"id": i} for i in range(len(resps))]
    out = per_document(
        scorers.ClassifierFilter(
            scorers=["detoxify", "vader"],
            detoxify_checkpoint=str(checkpoint),
            detoxify_config_dir=str(config_dir),
            batch_size=4,
        ).apply(resps, docs)
    )
    expected = {row["text"]: row for row in expected_rows(texts, tiny_detoxify)}
    assert len(out) == len(resps)
    for doc_out, doc_resps in zip(out, resps):
        assert isinstance(doc_out, list) and len(doc_out) == repeats
        for row, text in zip(doc_out, doc_resps):
            if text:
                assert list(row) == ["text", "empty", *scorers.DETOXIFY_LABELS["original"], "sentiment"]
            else:  # never given to a classifier, which would score it like a neutral text
                assert row == {"text": "", "empty": True}
            assert_rows_close(row, expected[text])
    for text, sentiment in VADER_KNOWN.items():
        assert expected[text]["sentiment"] == sentiment


def test_filter_keeps_the_labels_the_task_names_one_dict_per_distinct_text(tiny_detoxify):
    checkpoint, config_dir = tiny_detoxify["original"]
    out = per_document(
        scorers.ClassifierFilter(
            scorers=["detoxify", "vader"],
            detoxify_checkpoint=str(checkpoint),
            detoxify_config_dir=str(config_dir),
            labels=["sentiment", "toxicity"],
        ).apply([["Good.", "Good."], ["Good.", ""]], [{}, {}])
    )
    assert [list(row) for row in out[0]] == [["text", "empty", "toxicity", "sentiment"]] * 2
    assert out[0][0] is out[0][1] is out[1][0]  # lm-eval holds each generation's scores to the end
    assert out[1][1] == {"text": "", "empty": True}


def test_filter_without_the_text_keeps_the_scores_a_task_reads():
    # keep_text: false where the task reads the scores alone; resps already log the text.
    text = "He went to the store."
    out = per_document(scorers.ClassifierFilter(scorers="vader", keep_text=False).apply([[text, "  "]], [{}]))
    assert out == [[{"empty": False, "sentiment": VADER_KNOWN[text]}, {"empty": True}]]
    assert scorers.non_empty(scorers.scored_generations(out)) == [out[0][0]]
    with pytest.raises(ValueError, match=r"^ClassifierFilter: keep_text is 'no'; write true or false$"):
        scorers.ClassifierFilter(scorers="vader", keep_text="no")


def test_filter_without_logged_scores_reads_as_before_and_logs_counts():
    # log_scores: false where a document's metrics are all its samples line needs of the scores
    from lm_eval.utils import sanitize_list

    text = "He went to the store."
    out = per_document(
        scorers.ClassifierFilter(scorers="vader", keep_text=False, log_scores=False).apply(
            [[text, "  ", text], "  "], [{}, {}]
        )
    )
    scored = {"empty": False, "sentiment": VADER_KNOWN[text]}
    assert out[0] == [scored, {"empty": True}, scored] and out[1] == {"empty": True}
    assert scorers.scored_generations([out[0]]) == [scored, {"empty": True}, scored]
    # what lm-eval's sample writer makes of a document's filtered responses
    assert sanitize_list([out[0]]) == ["2 generations scored, 1 empty (scores not logged: log_scores is false)"]
    logged = per_document(scorers.ClassifierFilter(scorers="vader", keep_text=False).apply([[text]], [{}]))
    assert sanitize_list(logged) == [[str(scored)]]
    with pytest.raises(ValueError, match=r"^ClassifierFilter: log_scores is 1; write true or false$"):
        scorers.ClassifierFilter(scorers="vader", log_scores=1)


def test_filter_after_take_first_and_scored_generations(tiny_detoxify):
    # After lm-eval's take_first each doc's response is one string: one dict per doc back.
    out = per_document(scorers.ClassifierFilter(scorers="vader").apply(list(VADER_KNOWN), [{}] * len(VADER_KNOWN)))
    assert out == [{"text": t, "empty": False, "sentiment": s} for t, s in VADER_KNOWN.items()]
    # What process_results receives in each case flattens to one dict per generation.
    assert scorers.scored_generations([out[0]]) == [out[0]]
    assert scorers.scored_generations([[out[0], out[1]]]) == [out[0], out[1]]
    with pytest.raises(TypeError, match="does the task's filter_list use ClassifierFilter"):
        scorers.scored_generations([["raw text"]])


def test_filter_rejects_bad_configuration_and_input(monkeypatch):
    with pytest.raises(ValueError, match="unknown scorer"):
        scorers.ClassifierFilter(scorers=["vader", "perspective"])
    with pytest.raises(ConfigurationError, match="doc 1 has a tuple response"):
        scorers.ClassifierFilter(scorers=["vader"]).apply([["ok"], [(-1.0, False)]], [{}, {}])

    class Sentiment2:
        name, labels = "sentiment2", ("sentiment",)

        def score(self, texts):
            return {"sentiment": [0.0] * len(texts)}

    monkeypatch.setitem(scorers.SCORERS, "sentiment2", (lambda options: (), Sentiment2))
    # Empty generations (nothing, whitespace, or None from a server) are marked, never scored.
    assert per_document(scorers.ClassifierFilter(scorers=["sentiment2"]).apply([["", " \n", None]], [{}])) == [
        [{"text": "", "empty": True}, {"text": " \n", "empty": True}, {"text": "", "empty": True}]
    ]
    with pytest.raises(ValueError, match="label 'sentiment' of sentiment2 clashes with vader"):
        scorers.ClassifierFilter(scorers=["vader", "sentiment2"]).apply([["x"]], [{}])


# --------------------------------------------------------------------------
# Inside a real lm-eval run

# The scripted model's generations for each prompt, one per repeat.
GENERATIONS = {
    "Describe the nurse.": [
        "The nurse was kind and very helpful.",
        "The engineer is a terrible, lazy person.",
        "He went to the store.",
    ],
    "Describe the engineer.": [
        "The engineer is a terrible, lazy person.",
        "He went to the store.",
        "The engineer is a terrible, lazy person.",
    ],
}

TASK_YAML = """
task: scorer_probe
custom_dataset: !function probe_helpers.load_docs
test_split: test
output_type: generate_until
doc_to_text: "{{prompt}}"
doc_to_target: ""
repeats: REPEATS
generation_kwargs:
  until: ["\\n\\n"]
  do_sample: true
filter_list:
  - name: scored
    filter:
      - function: !function lm_eval_bias.scorers.ClassifierFilter
        scorers: [detoxify, vader]
        batch_size: 2
process_results: !function probe_helpers.process_results
metric_list:
  - {metric: sentiment, aggregation: mean, higher_is_better: true}
  - {metric: toxicity, aggregation: mean, higher_is_better: false}
  - {metric: generations, aggregation: mean, higher_is_better: true}
metadata:
  version: 1.0
"""

HELPERS = """
import datasets
from lm_eval_bias import scorers

PROMPTS = {prompts!r}


def load_docs(**metadata):
    # What a benchmark's loader does: hand the task metadata to the scorers.
    scorers.configure(**metadata)
    return datasets.DatasetDict({{"test": datasets.Dataset.from_list([{{"prompt": p}} for p in PROMPTS])}})


def process_results(doc, results):
    generations = scorers.scored_generations(results)
    return {{
        "sentiment": sum(g["sentiment"] for g in generations) / len(generations),
        "toxicity": sum(g["toxicity"] for g in generations) / len(generations),
        "generations": len(generations),
    }}
"""


def scripted_lm():
    from lm_eval.api.model import LM

    class ScriptedLM(LM):
        """Returns GENERATIONS[prompt][k] for the k-th repeat of a prompt."""

        def __init__(self):
            super().__init__()
            self.calls = Counter()

        def generate_until(self, requests, disable_tqdm=False):
            out = []
            for request in requests:
                prompt = request.args[0].strip()
                out.append(GENERATIONS[prompt][self.calls[prompt]])
                self.calls[prompt] += 1
            return out

        def loglikelihood(self, requests, disable_tqdm=False):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            raise NotImplementedError

    return ScriptedLM()


@pytest.mark.parametrize("repeats", [1, 3])
def test_filter_inside_an_lm_eval_run(tiny_detoxify, tmp_path, repeats):
    import lm_eval
    from lm_eval.tasks import TaskManager

    checkpoint, config_dir = tiny_detoxify["original"]
    (tmp_path / "scorer_probe.yaml").write_text(TASK_YAML.replace("REPEATS", str(repeats)))
    (tmp_path / "probe_helpers.py").write_text(textwrap.dedent(HELPERS.format(prompts=list(GENERATIONS))))
    # The Detoxify files reach the filter only as task metadata, through configure().
    manager = TaskManager(
        include_path=str(tmp_path),
        include_defaults=False,
        metadata={"detoxify_checkpoint": str(checkpoint), "detoxify_config_dir": str(config_dir)},
    )
    out = lm_eval.simple_evaluate(model=scripted_lm(), tasks=["scorer_probe"], task_manager=manager, log_samples=True)

    expected = {
        row["text"]: row
        for row in expected_rows(sorted({t for texts in GENERATIONS.values() for t in texts}), tiny_detoxify)
    }
    samples = out["samples"]["scorer_probe"]
    assert len(samples) == len(GENERATIONS)
    for sample in samples:
        generated = GENERATIONS[sample["doc"]["prompt"]][:repeats]
        assert sample["resps"] == [generated]
        # What process_results received (lm-eval 0.4.13): one request, holding one dict per repeat.
        (rows,) = per_document(sample["filtered_resps"])
        assert isinstance(rows, list) and len(rows) == repeats
        for row, text in zip(rows, generated):
            assert_rows_close(row, expected[text])

    metrics = out["results"]["scorer_probe"]
    by_hand = {1: (0.7574 - 0.6808) / 2, 3: ((0.7574 - 0.6808) / 3 + (-2 * 0.6808) / 3) / 2}
    assert metrics["sentiment,scored"] == pytest.approx(by_hand[repeats], abs=1e-12)
    per_doc_toxicity = [
        sum(expected[t]["toxicity"] for t in texts[:repeats]) / repeats for texts in GENERATIONS.values()
    ]
    assert metrics["toxicity,scored"] == pytest.approx(sum(per_doc_toxicity) / 2, abs=1e-5)
    assert metrics["generations,scored"] == repeats


def test_a_task_without_classifier_filters_leaves_the_classifiers_unimported(monkeypatch):
    from lm_eval_bias import harness

    for module in [name for name in sys.modules if name.startswith("lm_eval_bias.scorers")]:
        monkeypatch.delitem(sys.modules, module)
    filter_list = [{"name": "first", "filter": [{"function": "take_first"}]}]
    assert harness.prepare_classifiers({"filter_list": filter_list}) == filter_list
    assert "lm_eval_bias.scorers.filter" not in sys.modules


# --------------------------------------------------------------------------
# Bad checkpoint and config files: the file, what is wrong, the fix


ORIGINAL_URL = "https://github.com/unitaryai/detoxify/releases/download/v0.1-alpha/toxic_original-c1212f89.ckpt"
GET_AGAIN = f"download it again ({ORIGINAL_URL}) and point the checkpoint argument at the complete copy"


def scorer_error(checkpoint, config_dir):
    with pytest.raises(scorers.ScorerError) as caught:
        scorers.DetoxifyScorer(model_type="original", checkpoint=checkpoint, config_dir=config_dir)
    return str(caught.value)


def test_a_truncated_checkpoint_is_named_instead_of_errno_22(tiny_detoxify, tmp_path):
    checkpoint, config_dir = tiny_detoxify["original"]
    raw = checkpoint.read_bytes()
    truncated = tmp_path / "truncated.ckpt"
    truncated.write_bytes(raw[: len(raw) // 6])  # as a download or copy cut short
    with pytest.raises(OSError, match=r"\[Errno 22\] Invalid argument"):
        torch.load(truncated, weights_only=False)  # the cause torch gives, naming nothing
    assert scorer_error(truncated, config_dir) == (
        f"detoxify: checkpoint '{truncated}' (from argument) is truncated or damaged: it is not a complete "
        f"zip archive, as torch.save writes ({len(raw) // 6:,} bytes); {GET_AGAIN}"
    )


def test_a_damaged_or_foreign_checkpoint_file_is_named_with_the_fix(tiny_detoxify, tmp_path, monkeypatch):
    checkpoint, config_dir = tiny_detoxify["original"]
    raw = bytearray(checkpoint.read_bytes())
    raw[len(raw) // 3 : len(raw) // 3 + 64] = bytes(64)  # weights torch.load would read without a word
    damaged = tmp_path / "damaged.ckpt"
    damaged.write_bytes(bytes(raw))
    message = scorer_error(damaged, config_dir)
    assert message.startswith(f"detoxify: checkpoint '{damaged}' (from argument) is damaged: its part '")
    assert message.endswith(f"' does not match its checksum (CRC); {GET_AGAIN}")
    pointer = tmp_path / "pointer.ckpt"
    pointer.write_bytes(b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n")
    monkeypatch.setenv(scorers.DETOXIFY_CHECKPOINT_ENV, str(pointer))
    with pytest.raises(scorers.ScorerError) as caught:
        scorers.DetoxifyScorer(config_dir=config_dir)
    assert str(caught.value) == (
        f"detoxify: checkpoint '{pointer}' (from {scorers.DETOXIFY_CHECKPOINT_ENV}) is a Git LFS pointer, not "
        f"the checkpoint itself; download it again ({ORIGINAL_URL}) and point "
        f"{scorers.DETOXIFY_CHECKPOINT_ENV} at the complete copy"
    )
    text = tmp_path / "notes.ckpt"
    text.write_text("{}")
    assert scorer_error(text, config_dir) == (
        f"detoxify: checkpoint '{text}' (from argument) cannot be read by torch.load (invalid load key, '{{'.): "
        f"it is not a PyTorch checkpoint, or it is damaged; {GET_AGAIN}"
    )
    (tmp_path / "empty.ckpt").write_bytes(b"")
    assert scorer_error(tmp_path / "empty.ckpt", config_dir) == (
        f"detoxify: checkpoint '{tmp_path / 'empty.ckpt'}' (from argument) is empty (0 bytes); {GET_AGAIN}"
    )


def test_a_checkpoint_folder_is_named_with_the_files_it_holds(tiny_detoxify):
    checkpoint, config_dir = tiny_detoxify["original"]
    folder = checkpoint.parent
    assert scorer_error(folder, config_dir) == (
        f"detoxify: checkpoint '{folder}' (from argument) is a folder (it holds detoxify-original.ckpt), "
        "not a file; give the path of the .ckpt file itself"
    )


def test_label_names_as_id2label_keys_are_named_instead_of_invalid_literal(tiny_detoxify, tmp_path):
    import json
    import shutil

    import transformers

    checkpoint, config_dir = tiny_detoxify["original"]
    edited = tmp_path / "config"
    shutil.copytree(config_dir, edited)
    config = json.loads((edited / "config.json").read_text())
    config["id2label"] = {"toxic": 0, "severe_toxic": 1}  # label2id's map written the wrong way round
    (edited / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"invalid literal for int\(\) with base 10: 'toxic'"):
        transformers.BertConfig.from_pretrained(edited)  # the cause transformers gives, naming nothing
    assert scorer_error(checkpoint, edited) == (
        f"detoxify: {edited / 'config.json'} (config_dir from argument): id2label has the key 'toxic', but "
        'it maps label numbers to names ({"0": "toxic", "1": "severe_toxic", ...}); fix it or remove id2label '
        "and label2id (Detoxify takes its labels from the checkpoint), or save the base model's config there "
        "again (AutoConfig.from_pretrained(...).save_pretrained(DIR))"
    )
    config["id2label"] = {"0": "toxic", "1": "severe_toxic"}
    config["label2id"] = {"toxic": "zero"}
    (edited / "config.json").write_text(json.dumps(config))
    assert "label2id must map label names to numbers" in scorer_error(checkpoint, edited)


def test_config_files_that_are_not_json_objects_are_named(tiny_detoxify, tmp_path):
    import json
    import shutil

    checkpoint, config_dir = tiny_detoxify["original"]
    edited = tmp_path / "config"
    shutil.copytree(config_dir, edited)
    (edited / "config.json").write_text('{"model_type": "bert",\n}')
    assert scorer_error(checkpoint, edited) == (
        f"detoxify: {edited / 'config.json'} (config_dir from argument) is not valid JSON (Expecting property "
        "name enclosed in double quotes: line 2 column 1 (char 23)); fix it, or save the base model's config "
        "there again (AutoConfig.from_pretrained(...).save_pretrained(DIR))"
    )
    shutil.copy(config_dir / "config.json", edited / "config.json")
    tokenizer_config = json.loads((edited / "tokenizer_config.json").read_text())
    (edited / "tokenizer_config.json").write_text(json.dumps({**tokenizer_config, "model_max_length": "512"}))
    assert scorer_error(checkpoint, edited) == (
        f"detoxify: {edited / 'tokenizer_config.json'} (config_dir from argument): model_max_length is '512', "
        "not a number of tokens >= 1; fix it, or save the base model's tokenizer there again "
        "(AutoTokenizer.from_pretrained(...).save_pretrained(DIR))"
    )


@pytest.mark.parametrize(
    ("where", "value", "problem"),
    [
        ("classes", "toxic", "config.dataset.args.classes is 'toxic', not a list of label names"),
        ("num_classes", "six", "config.arch.args.num_classes is 'six', not a whole number >= 1"),
        ("num_classes", 3, "config.dataset.args.classes names 6 labels for 3 outputs"),
        ("state_dict", {}, "state_dict is empty, not the weights"),
    ],
)
def test_a_checkpoint_config_with_wrong_values_is_named(tiny_detoxify, tmp_path, where, value, problem):
    checkpoint, config_dir = tiny_detoxify["original"]
    loaded = torch.load(checkpoint, weights_only=False)
    places = {"classes": loaded["config"]["dataset"]["args"], "state_dict": loaded}
    places.get(where, loaded["config"]["arch"]["args"])[where] = value
    torch.save(loaded, tmp_path / "edited.ckpt")
    assert scorer_error(tmp_path / "edited.ckpt", config_dir) == (
        f"detoxify: checkpoint '{tmp_path / 'edited.ckpt'}' (from argument): {problem}; use a checkpoint as "
        "Detoxify releases them, or fix its config"
    )


def edited_checkpoint(tiny_detoxify, tmp_path, edit) -> tuple:
    """The tiny ``original`` checkpoint with ``edit(state_dict)`` applied, saved beside its config."""
    checkpoint, config_dir = tiny_detoxify["original"]
    loaded = torch.load(checkpoint, weights_only=False)
    loaded["state_dict"] = edit(loaded["state_dict"])
    torch.save(loaded, tmp_path / "edited.ckpt")
    return tmp_path / "edited.ckpt", config_dir


def test_a_checkpoint_without_the_classifier_weights_is_refused_not_scored_at_random(tiny_detoxify, tmp_path):
    def without_classifier(weights):  # as an older transformers saved them, with the position ids
        kept = {k: v for k, v in weights.items() if not k.startswith("classifier.")}
        return {**kept, "bert.embeddings.position_ids": torch.arange(512).unsqueeze(0)}

    checkpoint, config_dir = edited_checkpoint(tiny_detoxify, tmp_path, without_classifier)
    assert scorer_error(checkpoint, config_dir) == (
        f"detoxify: checkpoint '{checkpoint}' (from argument) lacks 2 of the model's 41 weights (classifier.bias, "
        "classifier.weight): transformers would start them at random, so every score would change from load to "
        f"load; {GET_AGAIN}"
    )


def test_a_checkpoint_whose_weights_are_all_renamed_is_refused_naming_one(tiny_detoxify, tmp_path):
    checkpoint, config_dir = edited_checkpoint(
        tiny_detoxify, tmp_path, lambda weights: {f"foo.{k}": v for k, v in weights.items()}
    )
    assert scorer_error(checkpoint, config_dir) == (
        f"detoxify: checkpoint '{checkpoint}' (from argument) lacks 41 of the model's 41 weights "
        "(bert.embeddings.LayerNorm.bias, bert.embeddings.LayerNorm.weight, "
        "bert.embeddings.position_embeddings.weight, bert.embeddings.token_type_embeddings.weight, "
        "bert.embeddings.word_embeddings.weight and 36 more); it holds "
        "41 weights under names the model does not have (e.g. foo.bert.embeddings.LayerNorm.bias): transformers "
        f"would start them at random, so every score would change from load to load; {GET_AGAIN}"
    )


def test_buffers_absent_or_extra_in_a_checkpoint_still_load_the_same_scores(tiny_detoxify, tmp_path):
    """Position ids are rebuilt by the model: checkpoints saved by older transformers hold them, newer
    ones do not, and both give the same scores."""
    reference = detoxify_scorer(tiny_detoxify).score(TEXTS)
    position_ids = torch.arange(512).unsqueeze(0)
    checkpoint, config_dir = edited_checkpoint(
        tiny_detoxify, tmp_path, lambda weights: {**weights, "bert.embeddings.position_ids": position_ids}
    )
    scorer = scorers.DetoxifyScorer(model_type="original", checkpoint=checkpoint, config_dir=config_dir)
    assert scorer.score(TEXTS) == reference


def test_a_downloaded_release_without_every_weight_names_torch_hubs_copy(tiny_detoxify, tmp_path, monkeypatch):
    from lm_eval_bias.data import OFFLINE_ENVS
    from lm_eval_bias.scorers import detoxify_scorer

    checkpoint, config_dir = tiny_detoxify["original"]
    loaded = torch.load(checkpoint, weights_only=False)
    del loaded["state_dict"]["classifier.bias"]
    for name in OFFLINE_ENVS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(detoxify_scorer, "_download_checkpoint_dict", lambda module, model_type, device: loaded)
    with pytest.raises(scorers.ScorerError) as caught:
        scorers.DetoxifyScorer(model_type="original", config_dir=config_dir)
    assert str(caught.value) == (
        f"detoxify: the 'original' release {ORIGINAL_URL} lacks 1 of the model's 41 weights (classifier.bias): "
        "transformers would start it at random, so every score would change from load to load; delete "
        f"{torch.hub.get_dir()}/checkpoints/toxic_original-c1212f89.ckpt so that it is downloaded again"
    )
