"""``--use_cache`` is keyed on the weights a run loads, not only on the model's name and arguments."""

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import lm_eval_bias
from lm_eval_bias import cache_key
from lm_eval_bias.errors import ConfigurationError, PreflightError
from tiny_models import build_tiny_gpt2, winoqueer_sentences

BIN = Path(sys.executable).parent
COMMIT_A = "a" * 40
COMMIT_B = "0123456789abcdef0123456789abcdef01234567"


def fake_hub_cache(root: Path, repo_id: str, refs: dict[str, str]) -> Path:
    """A Hugging Face hub cache holding only ``refs/`` of ``repo_id``, as a download leaves them."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    for name, commit in refs.items():
        (repo / "refs" / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / "refs" / name).write_text(commit)
    return repo


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "hub"


# --------------------------------------------------------------------------
# Hub ids


def test_a_hub_id_is_keyed_on_the_commit_its_revision_names_in_the_local_cache(offline_hub, tmp_path, caplog):
    repo = fake_hub_cache(offline_hub, "org/tiny", {"main": COMMIT_A})
    base = str(tmp_path / "cache" / "lm")
    with caplog.at_level(logging.INFO, logger="lm_eval_bias"):
        first = cache_key.cache_path_for_run(base, "hf", "pretrained=org/tiny,dtype=float32")
    (repo / "refs" / "main").write_text(COMMIT_B)  # the repository moved on and was downloaded again
    with caplog.at_level(logging.INFO, logger="lm_eval_bias"):
        second = cache_key.cache_path_for_run(base, "hf", "pretrained=org/tiny,dtype=float32")

    assert first != second
    assert re.fullmatch(re.escape(base) + r"__tiny__[0-9a-f]{12}__weights-[0-9a-f]{12}", first)
    assert first.rpartition("__weights-")[0] == second.rpartition("__weights-")[0]  # same model and arguments
    assert [record.getMessage() for record in caplog.records] == [
        f"--use_cache {base} -> {path} (keyed by the model, its arguments and its weights: pretrained=org/tiny: "
        f"commit {commit} ({repo / 'refs' / 'main'} in the local Hugging Face cache, offline))"
        for path, commit in ((first, COMMIT_A), (second, COMMIT_B))
    ]


def test_a_revision_that_is_a_branch_or_tag_is_resolved_through_its_own_ref(offline_hub, tmp_path):
    fake_hub_cache(offline_hub, "org/tiny", {"main": COMMIT_A, "v1": COMMIT_B})
    [source] = cache_key.identify_weights("hf", {"pretrained": "org/tiny", "revision": "v1"})
    assert source.key == f"pretrained=hub:org/tiny@{COMMIT_B}"


def test_a_pinned_commit_is_the_key_itself_without_any_cache(offline_hub):
    [source] = cache_key.identify_weights("hf", {"pretrained": "org/not-downloaded", "revision": COMMIT_B})
    assert (source.key, source.how) == (
        f"pretrained=hub:org/not-downloaded@{COMMIT_B}",
        f"commit {COMMIT_B} (pinned by revision=)",
    )


class FakeHubInfo:
    sha = COMMIT_B


def test_online_a_hub_id_is_resolved_on_the_hub(offline_hub, monkeypatch):
    from huggingface_hub import HfApi

    fake_hub_cache(offline_hub, "org/tiny", {"main": COMMIT_A})  # an older download: the hub wins
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    asked = []
    monkeypatch.setattr(HfApi, "model_info", lambda self, repo, **kw: asked.append((repo, kw)) or FakeHubInfo())
    [source] = cache_key.identify_weights("hf", "pretrained=org/tiny")
    assert (source.key, source.how) == (
        f"pretrained=hub:org/tiny@{COMMIT_B}",
        f"commit {COMMIT_B} (main on the Hugging Face hub)",
    )
    assert asked == [("org/tiny", {"revision": "main", "timeout": 10})]


def test_online_a_hub_that_cannot_be_asked_falls_back_to_the_local_cache_and_says_so(offline_hub, monkeypatch):
    from huggingface_hub import HfApi

    repo = fake_hub_cache(offline_hub, "org/tiny", {"main": COMMIT_A})
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)

    def unreachable(self, repo, **kw):
        raise ConnectionError("no route to host")

    monkeypatch.setattr(HfApi, "model_info", unreachable)
    [source] = cache_key.identify_weights("hf", "pretrained=org/tiny")
    assert source.how == (
        f"commit {COMMIT_A} ({repo / 'refs' / 'main'} in the local Hugging Face cache, the hub could not be "
        "asked: ConnectionError: no route to host)"
    )


def unresolvable_message(hub_cache: Path) -> str:
    ref = hub_cache / "models--org--unknown" / "refs" / "main"
    return (
        "--use_cache: cannot tell which weights pretrained=org/unknown names: it is no local folder, no "
        "revision= pins a commit, the hub is offline (HF_HUB_OFFLINE) and the local Hugging Face cache has "
        f"no {ref}. A cache keyed by the name alone could return another version's log-likelihoods. Fix: pin "
        "revision=<the full 40-character commit hash> in --model_args, or download the model once, or leave "
        "--use_cache out"
    )


@pytest.mark.parametrize(
    ("hub", "transformers", "expected"),
    [
        ("1", None, "HF_HUB_OFFLINE=1"),
        ("yes", "0", "HF_HUB_OFFLINE=yes"),
        (None, "TRUE", "TRANSFORMERS_OFFLINE=TRUE"),
        ("0", "1", None),  # the first that is set decides, as huggingface_hub reads them
        ("", "on", "TRANSFORMERS_OFFLINE=on"),
        (None, None, None),
    ],
)
def test_the_offline_variables_are_read_as_huggingface_hub_reads_them(monkeypatch, hub, transformers, expected):
    from huggingface_hub import constants

    for name, value in (("HF_HUB_OFFLINE", hub), ("TRANSFORMERS_OFFLINE", transformers)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert cache_key.offline_variable() == expected
    hub_reading = constants._is_true(os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE"))
    assert (expected is not None) == hub_reading


def test_a_hub_id_that_cannot_be_resolved_offline_is_refused_with_the_fix(offline_hub):
    with pytest.raises(ConfigurationError) as error:
        cache_key.cache_path_for_run("/tmp/lm", "hf", "pretrained=org/unknown")
    assert str(error.value) == unresolvable_message(offline_hub)


def test_an_adapter_and_a_tokenizer_from_the_hub_are_keyed_on_their_own_commits(offline_hub, tmp_path):
    fake_hub_cache(offline_hub, "org/base", {"main": COMMIT_A})
    adapter = fake_hub_cache(offline_hub, "org/lora", {"main": COMMIT_A})
    fake_hub_cache(offline_hub, "org/tok", {"main": COMMIT_A})
    args = {"pretrained": "org/base", "peft": "org/lora", "tokenizer": "org/tok"}
    before = cache_key.cache_path_for_run(str(tmp_path / "lm"), "hf", args)
    assert [source.key for source in cache_key.identify_weights("hf", args)] == [
        f"pretrained=hub:org/base@{COMMIT_A}",
        f"peft=hub:org/lora@{COMMIT_A}",
        f"tokenizer=hub:org/tok@{COMMIT_A}",
    ]
    (adapter / "refs" / "main").write_text(COMMIT_B)
    assert cache_key.cache_path_for_run(str(tmp_path / "lm"), "hf", args) != before


def test_an_uppercase_pinned_commit_pins_the_same_commit(offline_hub):
    [source] = cache_key.identify_weights("hf", {"pretrained": "org/not-downloaded", "revision": COMMIT_B.upper()})
    assert (source.key, source.how) == (
        f"pretrained=hub:org/not-downloaded@{COMMIT_B}",
        f"commit {COMMIT_B} (pinned by revision=)",
    )


def test_a_short_commit_is_refused_as_no_full_commit_hash(offline_hub):
    with pytest.raises(ConfigurationError) as error:
        cache_key.identify_weights("hf", {"pretrained": "org/unknown", "revision": COMMIT_B[:7]})
    assert str(error.value).startswith(
        "--use_cache: cannot tell which weights pretrained=org/unknown names: it is no local folder, "
        f"revision={COMMIT_B[:7]} is no full commit hash, the hub is offline (HF_HUB_OFFLINE) and the local "
        f"Hugging Face cache has no {offline_hub / 'models--org--unknown' / 'refs' / COMMIT_B[:7]}. "
    )


def test_a_cache_dir_is_the_hub_cache_the_weights_are_keyed_in(offline_hub, tmp_path):
    fake_hub_cache(offline_hub, "org/tiny", {"main": COMMIT_A})  # config and tokenizer (lm-eval's hf)
    own = fake_hub_cache(tmp_path / "X", "org/tiny", {"main": COMMIT_B})  # the weights
    args = f"pretrained=org/tiny,cache_dir={tmp_path / 'X'}"
    assert [(source.argument, source.key, source.how) for source in cache_key.identify_weights("hf", args)] == [
        (
            "pretrained",
            f"pretrained=hub:org/tiny@{COMMIT_B}",
            f"commit {COMMIT_B} ({own / 'refs' / 'main'} in the local Hugging Face cache, offline)",
        ),
        (
            "pretrained (config and tokenizer)",
            f"pretrained=hub-config:org/tiny@{COMMIT_A}",
            f"commit {COMMIT_A} ({offline_hub / 'models--org--tiny' / 'refs' / 'main'} in the local Hugging Face "
            "cache)",
        ),
    ]
    before = cache_key.cache_path_for_run(str(tmp_path / "lm"), "hf", args)
    (own / "refs" / "main").write_text(COMMIT_A)  # new weights downloaded into cache_dir
    assert cache_key.cache_path_for_run(str(tmp_path / "lm"), "hf", args) != before


def test_a_cache_dir_alone_resolves_a_hub_id_the_default_cache_lacks(offline_hub, tmp_path):
    fake_hub_cache(tmp_path / "X", "org/tiny", {"main": COMMIT_B})
    [source] = cache_key.identify_weights("vllm", {"pretrained": "org/tiny", "download_dir": str(tmp_path / "X")})
    assert source.key == f"pretrained=hub:org/tiny@{COMMIT_B}"


# --------------------------------------------------------------------------
# Local folders and files


def test_a_local_folder_is_keyed_on_its_files_names_sizes_and_modification_times(tmp_path):
    folder = tmp_path / "ckpt"
    (folder / ".git").mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"0" * 64)
    base = str(tmp_path / "lm")
    args = f"pretrained={folder}"
    first = cache_key.cache_path_for_run(base, "hf", args)
    assert cache_key.cache_path_for_run(base, "hf", args) == first
    (folder / ".git" / "index").write_text("a commit of the folder is no new weights")
    assert cache_key.cache_path_for_run(base, "hf", args) == first

    os.utime(folder / "model.safetensors", ns=(1, 1))  # same name and size, written at another time
    assert cache_key.cache_path_for_run(base, "hf", args) != first
    [source] = cache_key.identify_weights("hf", args)
    assert source.how.startswith(f"the folder {folder} (2 files by name, size and modification time: ")


def test_a_folder_linked_into_itself_is_listed_once(tmp_path):
    folder = tmp_path / "ckpt"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "weights.bin").write_bytes(b"0")
    (folder / "sub" / "up").symlink_to(folder, target_is_directory=True)
    [source] = cache_key.identify_weights("hf", {"pretrained": str(folder)})
    assert "(1 file by name, size and modification time: " in source.how


def test_a_local_adapter_folder_is_keyed_like_the_model(tmp_path, offline_hub):
    fake_hub_cache(offline_hub, "org/base", {"main": COMMIT_A})
    adapter = tmp_path / "lora"
    adapter.mkdir()
    (adapter / "adapter_model.safetensors").write_bytes(b"1" * 8)
    args = {"pretrained": "org/base", "peft": str(adapter)}
    before = cache_key.cache_path_for_run(str(tmp_path / "lm"), "hf", args)
    (adapter / "adapter_model.safetensors").write_bytes(b"2" * 9)
    assert cache_key.cache_path_for_run(str(tmp_path / "lm"), "hf", args) != before


def test_a_steering_vector_file_is_keyed_by_its_size_and_modification_time(tmp_path, caplog):
    vectors = tmp_path / "vec.csv"
    vectors.write_text("loc,action,sparse_model,hookpoint,steering_coefficient\n")
    args = f"pretrained=org/base,revision={COMMIT_A},steer_path={vectors}"
    base = str(tmp_path / "lm")
    before = cache_key.cache_path_for_run(base, "steered", args)
    [_, steer] = cache_key.identify_weights("steered", args)
    stat = vectors.stat()
    assert (steer.argument, steer.key) == (
        "steer_path",
        f"steer_path=file:{vectors}\t{stat.st_size}\t{stat.st_mtime_ns}",
    )

    vectors.write_text("loc,action,sparse_model,hookpoint,steering_coefficient\n0,add,sae,layer.0,2.0\n")
    with caplog.at_level(logging.INFO, logger="lm_eval_bias"):
        after = cache_key.cache_path_for_run(base, "steered", args)
    assert after != before
    assert f"steer_path={vectors}: the file {vectors} (size " in caplog.records[-1].getMessage()


def test_any_argument_naming_a_local_file_or_folder_is_keyed_but_output_and_cache_folders_are_not(tmp_path):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "model.pt").write_bytes(b"0")
    (tmp_path / "vocab.json").write_text("{}")
    (tmp_path / "offload").mkdir()
    args = {
        "load": str(tmp_path / "ckpt"),
        "vocab_file": str(tmp_path / "vocab.json"),
        "offload_folder": str(tmp_path / "offload"),
        "cache_dir": str(tmp_path),
        "dtype": "float32",
        "chat_template_args": "x" * 5000,  # too long for a file name: no path, no error
    }
    assert [source.argument for source in cache_key.identify_weights("megatron_lm", args)] == ["load", "vocab_file"]


# --------------------------------------------------------------------------
# What cannot be identified


def test_an_api_backend_is_keyed_by_name_and_arguments_with_a_warning(tmp_path, caplog):
    base = str(tmp_path / "lm")
    args = "model=served,base_url=http://127.0.0.1:8000/v1/completions"
    with caplog.at_level(logging.INFO, logger="lm_eval_bias"):
        path = cache_key.cache_path_for_run(base, "local-completions", args)
    assert path == cache_key.model_specific_cache_path(base, "local-completions", args)
    assert [(record.levelname, record.getMessage()) for record in caplog.records] == [
        (
            "WARNING",
            f"--use_cache {base} -> {path} is keyed by the model name and arguments only: the weights behind "
            "local-completions cannot be identified. After the served model changes, give --use_cache a new path",
        )
    ]


def test_a_model_object_is_refused():
    class Wrapper:
        pass

    with pytest.raises(ConfigurationError) as error:
        cache_key.identify_weights(Wrapper(), None)
    assert str(error.value) == (
        "--use_cache: the model is an object (Wrapper), so which weights it holds cannot be identified and a "
        "cache could return the log-likelihoods of other weights. Fix: pass the model by name (model='hf', "
        "model_args={'pretrained': FOLDER}), or leave use_cache out"
    )


@pytest.mark.e2e
def test_python_simple_evaluate_keys_the_cache_the_same_way(offline_hub, tmp_path, winoqueer_dir):
    """``lm_eval_bias.simple_evaluate(use_cache=...)`` goes through the same check as the command,
    before the model loads: here it is refused, since the cache holds another revision only and the
    hub id cannot be resolved."""
    fake_hub_cache(offline_hub, "org/unknown", {"v1": COMMIT_A})
    with pytest.raises(PreflightError) as error:
        lm_eval_bias.simple_evaluate(
            model="hf",
            model_args={"pretrained": "org/unknown"},
            tasks=["winoqueer"],
            metadata={"data_file": str(winoqueer_dir / "winoqueer_head_sample.csv")},
            use_cache=str(tmp_path / "lm"),
        )
    assert error.value.problems == [unresolvable_message(offline_hub)]


# --------------------------------------------------------------------------
# The loop users run: evaluate, change the weights in place, evaluate again


def run_winoqueer(workdir: Path, model_dir: Path, data_file: Path, use_cache: Path | None) -> tuple[list, str]:
    """One ``lm-eval-bias`` run of winoqueer; its samples' log-likelihoods and its stderr."""
    out = workdir / f"out{len(list(workdir.glob('out*')))}"
    command = [
        str(BIN / "lm-eval-bias"),
        "run",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={model_dir},dtype=float32",
        "--device",
        "cpu",
        "--batch_size",
        "16",
        "--tasks",
        "winoqueer",
        "--metadata",
        json.dumps({"data_file": str(data_file)}),
        "--output_path",
        str(out),
        "--log_samples",
        *(["--use_cache", str(use_cache)] if use_cache else []),
    ]
    completed = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-6000:]
    samples_file = next(out.rglob("samples_winoqueer_*.jsonl"))
    samples = sorted((json.loads(line) for line in samples_file.read_text().splitlines()), key=lambda s: s["doc_id"])
    return [sample["resps"] for sample in samples], completed.stderr


def cache_keys_logged(stderr: str) -> list[str]:
    return re.findall(r"--use_cache \S+ -> (\S+) \(keyed by the model, its arguments and its weights", stderr)


@pytest.mark.e2e
def test_weights_saved_into_the_same_folder_are_not_answered_from_the_cache(tmp_path, winoqueer_dir):
    model_dir = tmp_path / "ckpt"
    build_tiny_gpt2(model_dir, winoqueer_sentences(), seed=0)
    data_file = winoqueer_dir / "winoqueer_head_sample.csv"
    cache = tmp_path / "cache" / "lm"

    before, before_log = run_winoqueer(tmp_path, model_dir, data_file, cache)
    build_tiny_gpt2(model_dir, winoqueer_sentences(), seed=1)  # "fine-tuned" into the same folder
    after, after_log = run_winoqueer(tmp_path, model_dir, data_file, cache)
    uncached, _ = run_winoqueer(tmp_path, model_dir, data_file, None)

    assert after == uncached  # the new weights' log-likelihoods, not the cached ones
    assert after != before
    [first_key], [second_key] = cache_keys_logged(before_log), cache_keys_logged(after_log)
    assert first_key != second_key
    assert f"pretrained={model_dir}: the folder {model_dir} (" in after_log
    assert sorted(path.name for path in cache.parent.glob("*.db")) == sorted(
        [Path(first_key).name + "_rank0.db", Path(second_key).name + "_rank0.db"]
    )


@pytest.mark.e2e
def test_the_command_refuses_an_unresolvable_hub_id_before_the_model_loads(tmp_path, winoqueer_dir):
    hub_cache = tmp_path / "hub"
    # Another revision is downloaded, so the model may load; which weights main names cannot be told.
    fake_hub_cache(hub_cache, "org/unknown", {"v1": COMMIT_A})
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "lm_eval_bias",
            "--model",
            "hf",
            "--model_args",
            "pretrained=org/unknown",
            "--tasks",
            "winoqueer",
            "--metadata",
            json.dumps({"data_file": str(winoqueer_dir / "winoqueer_head_sample.csv")}),
            "--use_cache",
            str(tmp_path / "cache" / "lm"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub_cache)},
    )
    assert completed.returncode == 2
    assert completed.stderr.endswith(
        f"lm-eval-bias: error: 1 problem found before the evaluation started:\n- {unresolvable_message(hub_cache)}\n"
    )
    assert not (tmp_path / "cache").exists()


@pytest.mark.e2e
def test_the_stock_simple_evaluate_with_a_request_keyed_cache_is_refused_before_the_first_request(
    tmp_path, tiny_gpt2, winoqueer_dir
):
    import lm_eval

    cache = tmp_path / "cache" / "lm"
    with pytest.raises(PreflightError) as error:
        lm_eval.simple_evaluate(
            model="hf",
            model_args={"pretrained": str(tiny_gpt2), "dtype": "float32"},
            tasks=["winoqueer"],
            task_manager=lm_eval_bias.task_manager(
                metadata={"data_file": str(winoqueer_dir / "winoqueer_head_sample.csv")}
            ),
            device="cpu",
            use_cache=str(cache),
        )
    assert error.value.problems == [
        f"--use_cache: the cache {cache}_rank0.db is keyed on the request alone, so it could answer with another "
        "model's, or earlier weights', log-likelihoods. Fix: run with lm-eval-bias (or "
        "lm_eval_bias.simple_evaluate), which keys the cache on the model and its weights, or leave --use_cache out"
    ]


def test_cache_path_differs_between_models_and_model_args(tmp_path):
    base = str(tmp_path / "lm")
    gpt2 = cache_key.model_specific_cache_path(base, "hf", {"pretrained": "gpt2"})
    assert gpt2 == cache_key.model_specific_cache_path(base, "hf", {"pretrained": "gpt2"})
    assert gpt2 != cache_key.model_specific_cache_path(base, "hf", {"pretrained": "gpt2-medium"})
    assert gpt2 != cache_key.model_specific_cache_path(base, "hf", {"pretrained": "gpt2", "revision": "v2"})
    assert gpt2 != cache_key.model_specific_cache_path(base, "vllm", {"pretrained": "gpt2"})
    assert re.fullmatch(re.escape(base) + r"__gpt2__[0-9a-f]{12}", gpt2)


def test_cache_path_of_other_weights_differs_only_in_its_weights_part(tmp_path):
    base = str(tmp_path / "lm")
    args = {"pretrained": "./ckpt"}
    before = cache_key.model_specific_cache_path(base, "hf", args, ["pretrained=folder:1"])
    after = cache_key.model_specific_cache_path(base, "hf", args, ["pretrained=folder:2"])
    unidentified = cache_key.model_specific_cache_path(base, "hf", args)
    assert re.fullmatch(re.escape(unidentified) + r"__weights-[0-9a-f]{12}", before)
    assert re.fullmatch(re.escape(unidentified) + r"__weights-[0-9a-f]{12}", after)
    assert before != after


def test_cache_path_inside_an_existing_directory(tmp_path):
    path = cache_key.model_specific_cache_path(str(tmp_path), "hf", "pretrained=org/My Model,dtype=float32")
    assert Path(path).parent == tmp_path
    assert Path(path).name.startswith("My_Model__")
