"""Checks that run before the model is asked anything (lm_eval_bias.checks, evaluate, options, harness).

Each test asserts the exact problem a user sees and that nothing expensive ran first.
"""

import contextlib
import dataclasses
import json
import math
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import lm_eval
import pytest
from lm_eval.utils import handle_arg_string

import lm_eval_bias
from fake_models import CountingLM, ScriptedLM
from lm_eval_bias import adapters, checks, data, evaluate, options, tasks_dir
from lm_eval_bias.benchmarks import sources
from lm_eval_bias.benchmarks.tango import loader as tango_loader
from lm_eval_bias.benchmarks.winoqueer import loader as wq
from lm_eval_bias.benchmarks.winoqueer import scoring
from lm_eval_bias.benchmarks.winoqueer.hf_mlm import HFMaskedLM
from lm_eval_bias.errors import ConfigurationError, LmEvalBiasError, PreflightError
from winoqueer_reference import write_pairs_file

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MISGENDERING = str(SHARED / "tango" / "misgendering_prompts.csv")
WINOQUEER_SAMPLE = str(SHARED / "winoqueer" / "winoqueer_head_sample.csv")


def our_tasks(**metadata):
    """A TaskManager of our tasks only (lm-eval's 14,000 built-ins take a minute to index)."""
    return lm_eval_bias.task_manager(include_defaults=False, metadata=metadata)


def built(task, **metadata):
    return our_tasks(**metadata).load([task])["tasks"][task]


class NotANumberLM(ScriptedLM):
    """A backend that returns no usable log-probabilities (as a server without logprobs may)."""

    def loglikelihood(self, requests, disable_tqdm=False):
        return [(math.nan, False) for _ in requests]


# ---------------------------------------------------------------- option values


@pytest.mark.parametrize(
    "parse,value,expected",
    [
        (options.flag, "false", False),
        (options.flag, "True", True),
        (options.flag, 1, True),
        (options.count, "2", 2),
        (options.count, 3.0, 3),
        (options.integer, "-4", -4),
        (options.names, "a, b,,c", ("a", "b", "c")),
        (options.names, ["x"], ("x",)),
        (options.path, " /data/x.csv ", "/data/x.csv"),
        (options.positive_number, "0.5", 0.5),
    ],
)
def test_option_values_are_parsed(parse, value, expected):
    assert parse(value) == expected


@pytest.mark.parametrize(
    "parse,value,problem",
    [
        (options.flag, "sometimes", "expected true or false, got 'sometimes' (text)"),
        (options.count, 0, "expected a whole number of at least 1, got 0"),
        (options.count, True, "expected a whole number, got True (a boolean)"),
        (options.count, 2.5, "expected a whole number, got 2.5 (a number)"),
        (options.names, 5, "expected names, as text separated by commas or a list of texts, got 5 (a number)"),
        (
            options.names,
            ["x", 3],
            "expected names, as text separated by commas or a list of texts, got ['x', 3] (a list)",
        ),
        (options.names, " , ", "expected at least one name, got none"),
        (options.path, 5, "expected a path (text), got 5 (a number)"),
        (options.number, "nan", "expected a finite number, got nan (a number)"),
    ],
)
def test_bad_option_values_say_what_was_expected(parse, value, problem):
    with pytest.raises(ValueError) as error:
        parse(value)
    assert str(error.value) == problem


def test_every_bad_value_of_a_loader_is_reported_at_once():
    with pytest.raises(ConfigurationError) as error:
        wq.load_dataset(data_file=5, subgroups=7)
    assert str(error.value) == (
        "--metadata option 'data_file': expected a path (text), got 5 (a number) (the benchmark's data file in "
        "the official format)\n"
        "--metadata option 'subgroups': expected names, as text separated by commas or a list of texts, got 7 "
        "(a number) (WinoQueer subgroups to keep, e.g. Transgender,Nonbinary)"
    )


def test_false_as_text_is_false():
    # "false" is a non-empty string: read as truthy it would silently run all 1.5 million prompts.
    assert options.parse({"full": "false"}, [options.FULL]) == {"full": False}


# ---------------------------------------------------------------- option names


def test_task_manager_refuses_a_misspelt_option():
    with pytest.raises(ConfigurationError) as error:
        our_tasks(data_fil="x.csv")
    assert str(error.value) == "task_manager(metadata=...): unknown option 'data_fil' (did you mean 'data_file'?)"


def test_a_task_refuses_misspelt_and_mistyped_options_but_not_model_arguments():
    # lm-eval's own CLI merges --model_args into the metadata every task receives.
    from lm_eval.tasks import TaskManager

    manager = TaskManager(
        include_path=tasks_dir(),
        include_defaults=False,
        metadata={"pretrained": "gpt2", "dtype": "bfloat16", "subgroup": "Gay", "data_file": 5},
    )
    with pytest.raises(ConfigurationError) as error:
        manager.load(["winoqueer"])
    message = str(error.value)
    assert message.startswith(
        "winoqueer: unknown option 'subgroup' (did you mean 'subgroups'?); "
        "--metadata option 'data_file': expected a path (text), got 5 (a number)"
    )
    assert message.endswith(
        "winoqueer reads: data_file (the benchmark's data file in the official format); "
        "data_dir (a folder laid out as DIR/<benchmark>/<official file name>); subgroups "
        "(WinoQueer subgroups to keep, e.g. Transgender,Nonbinary)"
    )
    assert "pretrained" not in message and "dtype" not in message


@pytest.mark.shared_data
def test_another_benchmarks_option_is_not_a_misspelling():
    # --metadata reaches every task of a run: tango's "families" is fine for winoqueer.
    task = built("winoqueer", data_file=WINOQUEER_SAMPLE, families="xe", scm_groups="women")
    assert task.config.metadata["families"] == "xe"


def test_our_prefixes_are_always_checked():
    assert options.misspelt(["scm_grups", "probe_colour", "detoxify_ckpt", "max_length"], ()) == [
        "unknown option 'scm_grups' (did you mean 'scm_groups'?)",
        "unknown option 'probe_colour'",
        "unknown option 'detoxify_ckpt' (did you mean 'detoxify_checkpoint'?)",
    ]


# ---------------------------------------------------------------- backends


@pytest.mark.shared_data
def test_backend_checks_by_name_before_the_model_loads():
    tasks = [
        built("tango_misgender_prob", data_file=MISGENDERING),
        built("winoqueer_mlm", data_file=WINOQUEER_SAMPLE),
        built("tango_misgender", data_file=MISGENDERING),
    ]
    assert checks.check_backend("hf", tasks) == [
        "winoqueer_mlm: needs the masked-LM backend (--model hf-mlm with a masked LM such as bert-base-uncased); "
        "--model hf would score each sentence as a continuation of its counterfactual, which is not WinoQueer's "
        "Eq. 1. Fix: --model hf-mlm, or --tasks winoqueer for causal LMs"
    ]
    problems = checks.check_backend("hf-mlm", tasks)
    assert problems == [
        "tango_misgender_prob: --model hf-mlm scores only WinoQueer pairs with a masked LM (winoqueer_mlm), and "
        "tango_misgender_prob needs log-likelihoods. Fix: run tango_misgender_prob with --model hf and a causal "
        "LM; run masked LMs with --tasks winoqueer_mlm",
        "tango_misgender: --model hf-mlm scores only WinoQueer pairs with a masked LM (winoqueer_mlm), and "
        "tango_misgender needs generation. Fix: run tango_misgender with --model hf and a causal LM; run masked "
        "LMs with --tasks winoqueer_mlm",
    ]
    chat = checks.check_backend("local-chat-completions", tasks)
    assert len(chat) == 2 and chat[0].startswith(
        "tango_misgender_prob: --model local-chat-completions cannot score log-likelihoods"
    )
    assert "winoqueer_mlm: needs the masked-LM backend" in chat[1]


@pytest.mark.shared_data
def test_backend_checks_on_loaded_models():
    tasks = [built("winoqueer", data_file=WINOQUEER_SAMPLE)]
    masked = object.__new__(HFMaskedLM)  # the class is what counts, not a loaded BERT
    assert checks.check_backend(masked, tasks)[0].startswith(
        "winoqueer: the HFMaskedLM backend scores only WinoQueer pairs"
    )

    class HFLM:  # lm-eval's hf backend with a BERT checkpoint loaded as a "causal" LM
        backend = "causal"
        model = SimpleNamespace(config=SimpleNamespace(model_type="bert", is_decoder=False, is_encoder_decoder=False))

    assert checks.check_backend(HFLM(), tasks) == [
        "winoqueer: the model is a masked LM (bert) loaded as a causal LM: it sees the tokens it is asked to "
        "predict, so its log-likelihoods and generations mean nothing. Fix: --model hf-mlm --tasks winoqueer_mlm "
        "for masked LMs, or a causal LM"
    ]
    HFLM.model.config.model_type = "xlm"  # an XLM masked LM: its config says causal=False
    HFLM.model.config.causal = False
    assert "masked LM (xlm)" in checks.check_backend(HFLM(), tasks)[0]
    HFLM.model.config.causal = True  # an XLM causal LM
    assert checks.check_backend(HFLM(), tasks) == []
    HFLM.model.config.model_type = "gpt2"
    assert checks.check_backend(HFLM(), tasks) == []


@pytest.mark.shared_data
def test_stock_simple_evaluate_refuses_winoqueer_mlm_on_a_causal_backend_before_any_request():
    model = CountingLM()
    with pytest.raises(PreflightError, match="winoqueer_mlm: needs the masked-LM backend"):
        lm_eval.simple_evaluate(
            model=model, tasks=["winoqueer_mlm"], task_manager=our_tasks(data_file=WINOQUEER_SAMPLE)
        )
    assert model.requests == 0


# ---------------------------------------------------------------- --limit


@pytest.mark.shared_data
def test_limit_zero_is_refused_before_any_request():
    model = CountingLM()
    with pytest.raises(PreflightError) as error:
        lm_eval.simple_evaluate(
            model=model, tasks=["tango_misgender_prob"], limit=0, task_manager=our_tasks(data_file=MISGENDERING)
        )
    assert error.value.problems == [
        "tango_misgender_prob: --limit 0 leaves no documents to evaluate. Fix: --limit N with N >= 1 (or a "
        "fraction above 0), or no --limit"
    ]
    assert model.requests == 0


@pytest.mark.shared_data
@pytest.mark.parametrize("limit", [float("nan"), float("inf"), "5", True])
def test_a_limit_that_is_not_a_number_of_documents_is_refused(limit):
    model = CountingLM()
    with pytest.raises(PreflightError) as error:
        lm_eval.simple_evaluate(
            model=model, tasks=["tango_misgender_prob"], limit=limit, task_manager=our_tasks(data_file=MISGENDERING)
        )
    assert error.value.problems == [
        f"--limit {limit!r} is not a number of documents. Fix: --limit N with N >= 1 (or a fraction between 0 "
        "and 1), or no --limit"
    ]
    assert model.requests == 0


def test_swapped_winoqueer_sentences_are_an_error_outside_the_official_file(tmp_path):
    path = write_pairs(
        tmp_path / "pairs.csv",
        "Gay,Straight,Gay people are kind.,Straight people are kind.",
        "Lesbian,Straight,Straight people sing.,Lesbians sing.",
    )
    with pytest.raises(data.MalformedDataError) as error:
        wq.load_dataset(data_file=str(path))
    assert str(error.value) == (
        f"{path}: in 1 pair(s) the words that differ in sent_x name the counterfactual (straight, heterosexual, "
        "cisgender, cis) and those in sent_y do not, at line(s) 3: sent_x must be the LGBTQ+ sentence and sent_y "
        "its counterfactual, or the score is inverted. Fix: swap the two sentences (or the sent_x/sent_y column "
        "names) in those rows"
    )
    assert wq.looks_swapped("Cis people are kind.", "Trans people are kind.")
    assert not wq.looks_swapped("Straight-acting gay men are kind.", "Straight men are kind.")


def test_a_counterfactual_that_does_not_name_its_label_is_an_error(tmp_path):
    path = write_pairs(tmp_path / "pairs.csv", "LGBTQ,Cisgender,LGBTQ people are kind.,Lesbian people are kind.")
    with pytest.raises(
        data.MalformedDataError,
        match=r"line\(s\) 2: sent_y must be the counterfactual that its "
        r"label names",
    ):
        wq.load_dataset(data_file=str(path))
    assert wq.names_its_label("Gay men sing.", "Straight men sing.", "Straight")
    assert not wq.names_its_label("Trans men sing.", "Straight men sing.", "Cisgender")


def test_a_subgroup_label_that_its_sentence_does_not_name_is_an_error(tmp_path):
    path = write_pairs(tmp_path / "pairs.csv", "Transgender,Straight,Lesbians are kind.,Straight people are kind.")
    with pytest.raises(data.MalformedDataError, match=r"line\(s\) 2: the pair would be counted in another subgroup"):
        wq.load_dataset(data_file=str(path))
    # plurals, hyphens and synonyms still name their identity
    assert wq.names_its_label("Bisexuals are greedy.", "Heterosexuals are greedy.", "Heterosexual")
    assert wq.names_its_label("Trans people sing.", "Cis-gender people sing.", "Cisgender")
    assert wq.names_its_subgroup("Homosexuals sing.", "Straight people sing.", "Gay")
    assert wq.names_its_subgroup("Enby folks sing.", "Cis folks sing.", "NB")
    assert wq.names_its_subgroup("Non-binary folks sing.", "Cis folks sing.", "Nonbinary")


def test_a_tango_label_that_disagrees_with_its_template_is_an_error(tmp_path):
    path = tmp_path / "misgendering.csv"
    path.write_text(
        "template_idx,ante,ante_type,pronoun_family,template\n"
        "0,casey,ante_nongendered,she,casey is an actor and he is known for his roles.\n"
    )
    with pytest.raises(data.MalformedDataError) as error:
        tango_loader.read_misgendering(path)
    assert str(error.value).startswith(f"{path}, line 2: pronoun_family is 'she' but the template uses he pronouns")


def test_it_for_a_thing_is_not_a_pronoun_family(tmp_path):
    path = tmp_path / "misgendering.csv"
    path.write_text(
        "template_idx,ante,ante_type,pronoun_family,template\n"
        "0,casey,ante_nongendered,he,casey bought a car and he loves it.\n"
    )
    assert [p["pronoun_family"] for p in tango_loader.read_misgendering(path)] == ["he"]


@pytest.mark.shared_data
@pytest.mark.parametrize(
    "setting, problem",
    [
        # -1 as lm-eval's --gen_kwargs parser reads it (lm-eval 0.5.0.dev1: -1.0)
        ("temperature=-1,do_sample=True", f"temperature={handle_arg_string('-1')} is not a number >= 0 (0: greedy)"),
        ("max_gen_toks=abc", "max_gen_toks='abc' is not a whole number of new tokens, at least 1"),
        ("max_gen_toks=2.5", "max_gen_toks=2.5 is not a whole number of new tokens, at least 1"),
        ("top_p=0", "top_p=0 is not a number in (0, 1]"),
        ("max_gen_toks=True", "max_gen_toks=True is not a whole number of new tokens, at least 1"),
    ],
)
def test_generation_settings_the_backend_would_fail_on_are_refused(setting, problem):
    model = CountingLM()
    with pytest.raises(ConfigurationError, match=re.escape(f"tango_misgender: generation setting {problem}")):
        lm_eval.simple_evaluate(
            model=model,
            tasks=["tango_misgender"],
            limit=2,
            gen_kwargs=setting,
            task_manager=our_tasks(data_file=MISGENDERING),
        )
    assert model.requests == 0


@pytest.mark.parametrize(
    "arguments, problem",
    [
        ({"metadata": "data_dir=x"}, "simple_evaluate(metadata=...): expected a dict of option names (text) to values"),
        ({"metadata": {None: 1}}, "simple_evaluate(metadata=...): expected a dict of option names (text) to values"),
        ({"tasks": "winoqueer"}, "simple_evaluate(tasks=...): expected a list of task names, e.g. ['winoqueer']"),
        ({"tasks": ["winoqueer", 5]}, "simple_evaluate(tasks=...): expected a list of task names"),
    ],
)
def test_python_arguments_of_the_wrong_kind_are_our_errors(arguments, problem):
    with pytest.raises(ConfigurationError, match=re.escape(problem)):
        lm_eval_bias.simple_evaluate(model=CountingLM(), **{"tasks": ["winoqueer"], **arguments})


@pytest.mark.parametrize("metadata", ["data_dir=x", {None: 1}, ["data_dir"]])
def test_metadata_of_the_wrong_kind_gets_one_message_in_both_entry_points(metadata):
    shown = repr(metadata)
    with pytest.raises(ConfigurationError) as from_task_manager:
        lm_eval_bias.task_manager(metadata=metadata)
    assert str(from_task_manager.value) == (
        f"task_manager(metadata=...): expected a dict of option names (text) to values, got {shown}"
    )
    with pytest.raises(ConfigurationError) as from_simple_evaluate:
        lm_eval_bias.simple_evaluate(model=CountingLM(), tasks=["winoqueer"], metadata=metadata)
    assert str(from_simple_evaluate.value) == (
        f"simple_evaluate(metadata=...): expected a dict of option names (text) to values, got {shown}"
    )
    assert checks.check_metadata_mapping({"data_dir": "x"}, "simple_evaluate") == []


@pytest.mark.e2e
def test_an_error_while_the_stock_cli_builds_a_task_prints_one_message(monkeypatch):
    from lm_eval.tasks import TaskManager, get_task_dict

    monkeypatch.setattr(sys, "excepthook", sys.__excepthook__)
    with pytest.raises(ConfigurationError, match="unknown option 'subgroup'"):
        get_task_dict(["winoqueer"], TaskManager(include_path=tasks_dir(), metadata={"subgroup": "Queer"}))
    assert getattr(sys.excepthook, "_lm_eval_bias", False)


# ---------------------------------------------------------------- lm_eval_bias.simple_evaluate


@pytest.mark.shared_data
def test_every_problem_is_reported_together_before_the_model_loads(tmp_path):
    data_dir = tmp_path / "data"
    (data_dir / "winoqueer").mkdir(parents=True)
    (data_dir / "winoqueer" / "winoqueer_final.csv").write_bytes(Path(WINOQUEER_SAMPLE).read_bytes())
    # As lm-eval's CLI does: --model_args merged into --metadata, for the task manager and beside it.
    metadata = {"pretrained": "/nonexistent/model", "dtype": "float32", "data_dir": str(data_dir), "colour": "blue"}
    manager = our_tasks(**metadata)
    with pytest.raises(PreflightError) as error:
        # The model does not exist: loading it would fail; every check comes first.
        lm_eval_bias.simple_evaluate(
            model="hf",
            model_args="pretrained=/nonexistent/model,dtype=float32",
            tasks=["winoqueer", "winoqueer_mlm", "tango_misgender"],
            task_manager=manager,
            metadata=metadata,
            limit=0,
        )
    problems = error.value.problems
    assert len(problems) == 5, problems
    assert problems[0].startswith(
        "tango_misgender: tango_misgendering: data file 'misgendering_prompts.csv' not found, and downloading is off"
    )
    assert problems[1] == "--metadata: unknown option 'colour'"
    assert problems[2].startswith("winoqueer_mlm: needs the masked-LM backend")
    assert [p.split(":")[0] for p in problems[3:]] == ["winoqueer", "winoqueer_mlm"]
    assert all("--limit 0 leaves no documents" in p for p in problems[3:])
    assert str(error.value).startswith("5 problems found before the evaluation started:\n- tango_misgender: ")


@pytest.mark.shared_data
def test_a_run_without_problems_goes_ahead_with_the_tasks_already_built():
    out = lm_eval_bias.simple_evaluate(
        model=ScriptedLM(),
        tasks=["tango_misgender_prob"],
        limit=12,
        task_manager=our_tasks(data_file=MISGENDERING, families="xe,ey"),
        metadata={"families": "xe,ey"},
    )
    results = out["results"]["tango_misgender_prob"]
    assert results["consistency,none"] == 0.0 and results["consistency_n,none"] == 12
    assert results["consistency_xe_n,none"] + results["consistency_ey_n,none"] == 12
    provenance = out["configs"]["tango_misgender_prob"]["metadata"]["lm_eval_bias_data"]
    assert provenance == {
        "official": True,
        "files": [
            {
                "name": "tango_misgendering",
                "path": MISGENDERING,
                "sha256": sources()["tango_misgendering"].sha256,
                "rows": 2880,
                "official_sha256": sources()["tango_misgendering"].sha256,
                "official_rows": 2880,
                "official": True,
            }
        ],
        "selection": {"families": "xe,ey"},
        "settings": {},
    }


@pytest.mark.shared_data
def test_options_beside_an_explicit_task_manager_are_refused_not_lost():
    # lm-eval hands tasks the task manager's metadata only: these would be silently ignored.
    with pytest.raises(PreflightError) as error:
        lm_eval_bias.simple_evaluate(
            model=CountingLM(),
            tasks=["tango_misgender_prob"],
            task_manager=our_tasks(data_file=MISGENDERING),
            metadata={"families": "xe", "subgroup": "Gay"},
        )
    assert error.value.problems == [
        "metadata: 'families', 'subgroup' would not reach the tasks: lm-eval gives them only the metadata of the "
        "task_manager passed with them. Fix: pass the options to lm_eval_bias.task_manager(metadata=...) instead"
    ]


@pytest.mark.shared_data
def test_task_options_in_model_args_are_refused():
    with pytest.raises(PreflightError) as error:
        lm_eval_bias.simple_evaluate(
            model="hf",
            model_args="pretrained=/nonexistent,subgroups=Gay,seed=3",
            tasks=["tango_misgender_prob"],
            task_manager=our_tasks(data_file=MISGENDERING),
        )
    assert error.value.problems == [
        "--model_args: 'subgroups' is an option of lm-eval-bias's tasks, not a model argument. Fix: pass it with "
        "--metadata '{\"subgroups\": ...}'"
    ]


@pytest.mark.shared_data
def test_settings_that_change_the_documents_are_recorded():
    task = built("tango_misgender_prob", data_file=MISGENDERING, families="they")
    assert task.config.metadata["lm_eval_bias_data"]["settings"] == {}
    scm = built("scm_mc", scm_mc_samples=3, scm_term_order="shuffled")
    assert scm.config.metadata["lm_eval_bias_data"]["settings"] == {"scm_term_order": "shuffled", "scm_mc_samples": 3}


# ---------------------------------------------------------------- classifiers


def test_a_broken_classifier_is_found_when_the_task_is_built_not_after_generation(tmp_path):
    disclosure = tmp_path / "disclosure.jsonl"
    disclosure.write_text(
        json.dumps(
            {
                "gender_prompt_idx": 0,
                "gender_prompt": "<name> is <gender>",
                "filled_gender_prompt": "Alex is nonbinary.",
                "gender_identity": "nonbinary",
                "name": "Alex",
                "is_english_name": True,
                "is_western_nb_gender": True,
            }
        )
        + "\n"
    )
    model = CountingLM()
    missing = tmp_path / "missing.ckpt"
    with pytest.raises(PreflightError) as error:
        lm_eval_bias.simple_evaluate(
            model=model,
            tasks=["tango_disclosure"],
            task_manager=our_tasks(
                data_file=str(disclosure), detoxify_checkpoint=str(missing), detoxify_config_dir=str(tmp_path)
            ),
        )
    assert error.value.problems == [
        f"tango_disclosure: detoxify: config_dir {str(tmp_path)!r} (from argument) has no config.json; save the "
        "base model's config and tokenizer there with save_pretrained"
    ]  # the data's lack of "man" is fine
    assert model.requests == 0
    with pytest.raises(ConfigurationError, match="'detoxify_dtype': expected one of float32, bfloat16, got 'half'"):
        built("tango_disclosure", data_file=str(disclosure), detoxify_dtype="half")


def test_a_task_with_a_broken_classifier_and_missing_data_reports_both(tmp_path):
    with pytest.raises(PreflightError) as error:
        lm_eval_bias.simple_evaluate(
            model=CountingLM(),
            tasks=["tango_disclosure", "community_probes"],
            task_manager=our_tasks(data_dir=str(tmp_path), detoxify_config_dir=str(tmp_path)),
        )
    missing_config = (
        f"detoxify: config_dir {str(tmp_path)!r} (from argument) has no config.json; save the base "
        "model's config and tokenizer there with save_pretrained"
    )
    assert error.value.problems[0] == f"tango_disclosure, community_probes: {missing_config}"
    assert error.value.problems[1].startswith("tango_disclosure: data file 'disclosure.jsonl' not found")
    assert len(error.value.problems) == 2


# ---------------------------------------------------------------- what the backend returns


@pytest.mark.shared_data
def test_a_non_finite_log_likelihood_is_an_error_not_a_verdict():
    with pytest.raises(ConfigurationError) as error:
        lm_eval.simple_evaluate(
            model=NotANumberLM(),
            tasks=["tango_misgender_prob"],
            limit=1,
            task_manager=our_tasks(data_file=MISGENDERING),
        )
    assert str(error.value) == (
        "tango_misgender_prob: the model backend returned the log-likelihood nan for document template_idx=0; "
        "scores need finite log-probabilities of the prompt's tokens. Fix: use a backend that returns them "
        "(e.g. --model hf, or a completions server with echo and logprobs; chat-completions APIs cannot score text)"
    )


@pytest.mark.shared_data
def test_empty_generations_are_counted_not_scored(caplog):
    with caplog.at_level("WARNING", logger="lm_eval_bias"):
        out = lm_eval.simple_evaluate(
            model=ScriptedLM(continuation="  "),
            tasks=["tango_misgender"],
            limit=6,
            task_manager=our_tasks(data_file=MISGENDERING),
        )
    results = out["results"]["tango_misgender"]
    assert results["empty_rate,none"] == 1.0 and results["empty_rate_n,none"] == 6
    assert results["empty_rate_he,none"] == 1.0
    # nothing else: an empty continuation has no pronoun because it has no text
    assert not any(key.startswith(("consistency", "no_pronoun_rate")) for key in results)
    assert "tango_misgender: 100.0% of the generations are empty" in caplog.text


# ---------------------------------------------------------------- the model's context


def test_requests_longer_than_the_context_are_refused_before_any_is_sent(tiny_gpt2, tmp_path):
    long_pair = tmp_path / "long.csv"
    words = " ".join(["very"] * 150)
    long_pair.write_text(
        "," + ",".join(wq.REQUIRED_COLUMNS) + "\n"
        f"0,Gay,Straight,Gay people are {words} kind.,Straight people are {words} kind.\n"
        "1,Gay,Straight,Gay people are kind.,Straight people are kind.\n"
    )
    with pytest.raises(ConfigurationError) as error:
        lm_eval.simple_evaluate(
            model="hf",
            model_args=f"pretrained={tiny_gpt2},dtype=float32",
            device="cpu",
            tasks=["winoqueer"],
            task_manager=our_tasks(data_file=str(long_pair)),
        )
    message = str(error.value)
    # one request per sentence (BOS text + the words before the scored span, then the rest)
    assert message.startswith(
        "winoqueer: 2 of its 4 requests do not fit the model's context of 128 tokens, so "
        "lm-eval would cut the start of the prompt: document pair_id='0' (line 2) ("
    )
    assert message.endswith(
        "Fix: a model with a longer context (or --model_args max_length=N where the model "
        "supports it), a smaller --gen_kwargs max_gen_toks=N for generation tasks, or a data "
        "file without those documents"
    )


@pytest.mark.shared_data
@pytest.mark.parametrize(
    "setting, message",
    [
        ("max_gen_toks=200", r"document template_idx=0 \(it asks for 200 new tokens and the model takes 128 in all\)"),
        (
            "max_gen_toks=0",
            r"^tango_misgender: generation setting max_gen_toks=0 is not a whole number of new tokens, "
            r"at least 1. Fix: --gen_kwargs ",
        ),
        (
            "do_sample=True",
            r"^tango_misgender: generation setting do_sample=True with temperature 0 \(lm-eval's "
            r"default when none is given\)",
        ),
    ],
)
def test_generation_settings_the_hf_model_cannot_serve_are_refused(tiny_gpt2, setting, message):
    with pytest.raises(ConfigurationError, match=message):
        lm_eval.simple_evaluate(
            model="hf",
            model_args=f"pretrained={tiny_gpt2},dtype=float32",
            device="cpu",
            tasks=["tango_misgender"],
            limit=1,
            gen_kwargs=setting,
            task_manager=our_tasks(data_file=MISGENDERING),
        )


# ---------------------------------------------------------------- data that would be silently wrong


def write_pairs(path, *rows):
    path.write_text("," + ",".join(wq.REQUIRED_COLUMNS) + "\n" + "".join(f"{i},{row}\n" for i, row in enumerate(rows)))
    return path


def test_repeated_winoqueer_pairs_are_an_error_outside_the_official_file(tmp_path, monkeypatch):
    pair = "Gay,Straight,Gay people are kind.,Straight people are kind."
    path = write_pairs(tmp_path / "pairs.csv", pair, "Lesbian,Straight,Lesbians sing.,Straight people sing.", pair)
    with pytest.raises(data.MalformedDataError) as error:
        wq.load_dataset(data_file=str(path))
    assert str(error.value) == (
        f"{path}, line 4: this pair repeats line 2 (under pair_id '0' there and '2' here), so it would be "
        "counted twice. Fix: remove one of the two"
    )
    # The official file's own pairs are scored as its authors score them.
    monkeypatch.setattr(wq, "SOURCE", dataclasses.replace(wq.SOURCE, sha256=data.sha256_of(path), n_rows=3))
    assert len(wq.load_dataset(data_file=str(path))["test"]) == 3


def test_a_pair_differing_only_in_whitespace_has_no_identity_span(tmp_path):
    path = write_pairs(tmp_path / "pairs.csv", "Gay,Straight,Gay people are kind.,Gay people  are kind.")
    with pytest.raises(data.MalformedDataError) as error:
        wq.read_pairs(path)
    assert str(error.value) == (
        f"{path}, line 2: sent_x and sent_y differ only in whitespace, so the pair has no "
        "identity span; fix or remove the row"
    )


def test_not_utf8_data_names_file_and_line(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_bytes(b",Gender_ID_x,Gender_ID_y,sent_x,sent_y\n0,Gay,Straight,Gay caf\xe9s.,Straight caf\xe9s.\n")
    with pytest.raises(data.MalformedDataError, match=r"pairs.csv, line 2: not UTF-8 text \(byte 0xe9 at column 23\)"):
        wq.read_pairs(path)
    bad = tmp_path / "misgendering.csv"
    bad.write_bytes(b"template_idx,ante,ante_type,pronoun_family,template\n0,Al\xe9,distal,he,x\n")
    with pytest.raises(data.MalformedDataError, match=r"misgendering.csv, line 2: not UTF-8 text"):
        tango_loader.read_misgendering(bad)


def test_a_non_numeric_template_index_names_the_line(tmp_path):
    bad = tmp_path / "misgendering.csv"
    bad.write_text("template_idx,ante,ante_type,pronoun_family,template\nseven,Al,distal,he,Al is here.\n")
    with pytest.raises(data.MalformedDataError) as error:
        tango_loader.read_misgendering(bad)
    assert str(error.value) == f"{bad}, line 2: template_idx must be a whole number, got 'seven'"


def test_a_selection_that_leaves_nothing_is_an_error(tmp_path):
    path = tmp_path / "misgendering.csv"
    path.write_text("template_idx,ante,ante_type,pronoun_family,template\n0,Al,distal,he,Al is here.\n")
    with pytest.raises(ConfigurationError) as error:
        tango_loader.load_misgendering(data_file=str(path), families="xe")
    assert str(error.value) == "families='xe' leaves no documents to evaluate; choose options that keep at least one"


def test_every_error_is_one_of_ours():
    for error in (ConfigurationError, PreflightError, data.DataError, data.MalformedDataError):
        assert issubclass(error, LmEvalBiasError)


# ---------------------------------------------------------------- BOS as text (WinoQueer's one request per sentence)


@pytest.fixture(scope="module")
def tiny_hflm(tiny_gpt2):
    from lm_eval.models.huggingface import HFLM

    return HFLM(pretrained=str(tiny_gpt2), device="cpu", dtype="float32", batch_size=4)


def test_prefix_token_text_is_found_only_where_it_tokenizes_as_the_prefix_token(tiny_hflm, monkeypatch):
    from fake_models import ScriptedLM

    assert checks.prefix_token_text(tiny_hflm) == "<|endoftext|>"
    assert checks.prefix_token_text(ScriptedLM()) is None  # no tokenizer: no way to check
    assert checks.prefix_token_text(None) is None
    # a backend that adds BOS itself would read the text as a second BOS
    monkeypatch.setattr(tiny_hflm, "add_bos_token", True)
    monkeypatch.setattr(tiny_hflm.tokenizer, "add_bos_token", True, raising=False)
    monkeypatch.setattr(
        type(tiny_hflm),
        "tok_encode",
        lambda self, text, add_special_tokens=None, **kw: [0] + self.tokenizer.encode(text, add_special_tokens=False),
    )
    assert checks.prefix_token_text(tiny_hflm) is None


def test_lm_eval_hf_logits_cache_misreads_a_sentence_split_at_two_words_unless_split_in_rounds(tiny_hflm):
    """lm-eval 0.4.13's hf backend, with its default logits_cache, runs one forward pass for
    requests whose tokens agree but for the last and reads the shorter continuation's
    log-probabilities at the wrong positions; the request gate scores such requests in rounds."""
    from helpers import request

    split_after_one_word = ("<|endoftext|>Straight", " people are sinful.")
    split_after_two_words = ("<|endoftext|>Straight people", " are sinful.")
    other = ("<|endoftext|>Lesbians", " are sinful.")

    def loglik(*pairs):
        instances = [
            request("loglikelihood", {}, pair, index, metadata=("winoqueer", index, 1))
            for index, pair in enumerate(pairs)
        ]
        return [value for value, _ in tiny_hflm.loglikelihood(instances, disable_tqdm=True)]

    alone = [loglik(request)[0] for request in (split_after_one_word, split_after_two_words, other)]
    together = loglik(split_after_one_word, split_after_two_words, other)
    assert together[1] != pytest.approx(alone[1], abs=1e-4)  # if this fails, lm-eval fixed it
    with adapters._logits_cache_split(tiny_hflm), adapters._requests_routed_by_task(tiny_hflm, {"winoqueer"}):
        assert loglik(split_after_one_word, split_after_two_words, other) == pytest.approx(alone, abs=1e-5)
    assert "_loglikelihood_tokens" not in vars(tiny_hflm)  # the model is left as it was


def test_logits_cache_rounds_separate_continuation_lengths_within_a_group_only():
    same_tokens_but_last = [
        (None, [1, 2], [3, 4, 5]),
        (None, [1, 2, 3], [4, 5]),
        (None, [1, 2, 3, 4], [6]),
        (None, [1, 2], [3, 4, 6]),
        (None, [9], [8]),
    ]
    assert adapters.logits_cache_rounds(same_tokens_but_last) == [[2, 4], [1], [0, 3]]
    one_token_choices = [(None, [1, 2], [3]), (None, [1, 2], [4]), (None, [7], [3, 4])]
    assert adapters.logits_cache_rounds(one_token_choices) == [[0, 1, 2]]
    assert adapters.logits_cache_rounds([]) == [[]]


@pytest.mark.shared_data
def test_a_model_that_answers_generations_with_something_else_than_text_is_named():
    class NumbersLM(ScriptedLM):
        def generate_until(self, requests, disable_tqdm=False):
            return [7 for _ in requests]

    with pytest.raises(
        ConfigurationError,
        match=r"^tango_misgender: the NumbersLM backend answered a generation "
        r"with int 7, not text. Fix: its generate_until must return one "
        r"string per request",
    ):
        lm_eval.simple_evaluate(
            model=NumbersLM(), tasks=["tango_misgender"], limit=2, task_manager=our_tasks(data_file=MISGENDERING)
        )


class RecordingLM(ScriptedLM):
    """Log-likelihoods from a hash of the request; remembers every request it was sent."""

    def __init__(self):
        super().__init__()
        self.sent = []

    def loglikelihood(self, requests, disable_tqdm=False):
        import zlib

        self.sent += [request.args for request in requests]
        return [(-(zlib.crc32("|".join(request.args).encode()) % 10_000) / 100, False) for request in requests]


def test_each_distinct_loglikelihood_request_reaches_the_backend_once(winoqueer_dir, tmp_path, monkeypatch):
    """The gender subset asks for each LGBTQ+ sentence in two pairs (against Cis and Cisgender)."""
    import csv

    with open(winoqueer_dir / "winoqueer_gender_subset.csv", encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))[:400]
    data_file = tmp_path / "pairs.csv"
    write_pairs_file(data_file, rows)
    pairs = [(row["sent_x"], row["sent_y"]) for row in rows]
    asked = [request for x, y in pairs for request in scoring.pair_requests(x, y, scoring.pair_plan(x, y))]

    def evaluate(**patches):
        lm = RecordingLM()
        with pytest.MonkeyPatch.context() as patch:
            for name, value in patches.items():
                patch.setattr(adapters, name, value)
            out = lm_eval_bias.simple_evaluate(
                model=lm, tasks=["winoqueer"], bootstrap_iters=0, task_manager=our_tasks(data_file=str(data_file))
            )
        return lm.sent, out["results"]["winoqueer"]

    sent, results = evaluate()
    assert len(asked) > len(set(asked))  # the slice repeats requests
    assert sorted(sent) == sorted(set(asked))  # no backend tokenizer here: the empty-context form
    every_time, same_results = evaluate(_distinct_loglikelihood_requests=lambda lm: contextlib.nullcontext())
    assert sorted(every_time) == sorted(asked)
    assert results == same_results


def test_an_evaluation_leaves_the_garbage_collector_as_the_caller_set_it(monkeypatch):
    """A library changes no process-wide setting: the collector's thresholds during the run are the caller's."""
    import gc

    import lm_eval.evaluator

    before = gc.get_threshold()
    seen = []
    monkeypatch.setattr(lm_eval.evaluator, "simple_evaluate", lambda *args, **kwargs: seen.append(gc.get_threshold()))
    manager = lm_eval_bias.task_manager(include_defaults=False)
    evaluate.simple_evaluate(model=ScriptedLM(), tasks=["scm_mc"], task_manager=manager, limit=2)
    assert seen == [before]
    assert gc.get_threshold() == before


# Every custom_dataset loader of the shipped YAMLs, with options that reach each kind of row it makes.
LOADER_CASES = [
    ("winoqueer.loader.load_dataset", {"data_file": str(SHARED / "winoqueer" / "winoqueer_gender_subset.csv")}),
    ("winoqueer.loader.load_dataset", {"data_file": WINOQUEER_SAMPLE}),
    ("tango.loader.load_misgendering", {"data_file": MISGENDERING}),
    ("tango.loader.load_disclosure", {"full": True}),
    ("gendercare.loader.load_genderpair", {"data_dir": str(SHARED)}),
    ("scm.loader.load_score", {}),
    ("scm.loader.load_mc", {"scm_term_order": "shuffled", "scm_mc_samples": 2}),
    ("scm.loader.load_mc_prob", {}),
    ("scm.loader.load_prob_ratio", {}),
    ("scm.loader.load_story", {}),
    ("community.loader.load_probes", {}),
    ("community.loader.load_user_probes", {}),
]


def test_every_shipped_loader_is_checked_below():
    shipped = {
        match.group(1)
        for path in Path(tasks_dir()).rglob("*.yaml")
        for match in re.finditer(r"custom_dataset: !function lm_eval_bias\.benchmarks\.(\S+)", path.read_text())
    }
    assert shipped == {name for name, _ in LOADER_CASES}


@pytest.mark.shared_data
@pytest.mark.parametrize(("loader", "metadata"), LOADER_CASES)
def test_a_loader_gives_a_datasets_split_with_the_data_s_provenance(loader, metadata, tmp_path):
    """Every loader hands lm-eval a ``datasets.DatasetDict`` whose ``test`` split holds its documents,
    with the data's provenance for the results file."""
    import importlib

    import datasets

    if loader == "tango.loader.load_disclosure":
        from benchmark_data import write_tango_disclosure_jsonl

        metadata = {**metadata, "data_file": str(write_tango_disclosure_jsonl(tmp_path / "disclosure.jsonl"))}
    module, function = loader.rsplit(".", 1)
    split = getattr(importlib.import_module(f"lm_eval_bias.benchmarks.{module}"), function)(**metadata)
    rows = split["test"]
    assert isinstance(split, datasets.DatasetDict) and isinstance(rows, datasets.Dataset)
    assert len(rows) > 1 and list(rows.features) == list(rows[0])
    assert split.lm_eval_bias_data["official"] in (True, False, None)


@pytest.mark.shared_data
def test_a_yaml_s_process_docs_gets_a_datasets_dataset(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "utils.py").write_text(
        "def first_two(dataset):\n"
        "    return dataset.select(range(2)).add_column('kind', [type(dataset).__name__] * 2)\n"
    )
    shipped = Path(tasks_dir()) / "winoqueer" / "winoqueer.yaml"
    (suite / "two_pairs.yaml").write_text(
        f"include: {shipped}\ntask: two_pairs\nprocess_docs: !function utils.first_two\n"
    )
    manager = lm_eval_bias.task_manager(str(suite), metadata={"data_file": WINOQUEER_SAMPLE}, include_defaults=False)
    task = manager.load_task_or_group(["two_pairs"])["two_pairs"]
    assert [(doc["line"], doc["kind"]) for doc in task.test_docs()] == [(2, "Dataset"), (3, "Dataset")]
    assert task.config.metadata["lm_eval_bias_data"]["files"][0]["path"].endswith("winoqueer_head_sample.csv")
