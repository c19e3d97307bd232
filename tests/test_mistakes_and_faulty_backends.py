"""User mistakes and faulty backends: settings that would change a method, degenerate or failing
backends, data a user might get slightly wrong, results, gates and leaderboards, and the error style
outside ``lm-eval-bias``.

Every test names the user mistake or backend fault and asserts the exact message or the
documented result; none of them may exit 0 with a misleading number.
"""

import json
import sys
from pathlib import Path

import lm_eval
import pytest
from lm_eval.api.model import LM

import lm_eval_bias
from fake_models import ScriptedLM
from helpers import per_document, run_cli, winoqueer_results, write
from lm_eval_bias import adapters, cli, data, lm_eval_features, scorers
from lm_eval_bias.benchmarks.gendercare import loader as genderpair_loader
from lm_eval_bias.benchmarks.scm import lexicon as scm_lexicon
from lm_eval_bias.benchmarks.scm import options as scm_options
from lm_eval_bias.benchmarks.scm import parsing as scm_parsing
from lm_eval_bias.benchmarks.scm import scoring as scm_scoring
from lm_eval_bias.benchmarks.tango import loader as tango_loader
from lm_eval_bias.benchmarks.tango import task as tango_task
from lm_eval_bias.benchmarks.winoqueer import loader as wq
from lm_eval_bias.errors import ConfigurationError, LmEvalBiasError, PreflightError
from lm_eval_bias.report import results
from lm_eval_bias.report.gate_rules import load_policy

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MISGENDERING = str(SHARED / "tango" / "misgendering_prompts.csv")
WINOQUEER_SAMPLE = str(SHARED / "winoqueer" / "winoqueer_head_sample.csv")


def our_tasks(**metadata):
    return lm_eval_bias.task_manager(include_defaults=False, metadata=metadata)


class RecordingLM(LM):
    """Returns equal log-likelihoods (a degenerate backend) and records every request's arguments."""

    def __init__(self, generation=" They left."):
        super().__init__()
        self.arguments, self.generation = [], generation

    @property
    def tokenizer_name(self) -> str:
        return "recording"

    def apply_chat_template(self, history, add_generation_prompt=True) -> str:
        return "<chat>" + str(history)

    def loglikelihood(self, requests, disable_tqdm=False):
        self.arguments += [request.args for request in requests]
        return [(-1.0, False) for _ in requests]

    def generate_until(self, requests, disable_tqdm=False):
        self.arguments += [request.args for request in requests]
        return [self.generation for _ in requests]

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError


# ---------------------------------------------------------------- settings that would change the method


@pytest.mark.shared_data
def test_num_fewshot_does_not_reach_our_zero_shot_tasks():
    plain, with_shots = RecordingLM(), RecordingLM()
    for model, shots in ((plain, None), (with_shots, 3)):
        lm_eval.simple_evaluate(
            model=model,
            tasks=["tango_misgender_prob"],
            limit=4,
            num_fewshot=shots,
            task_manager=our_tasks(data_file=MISGENDERING),
        )
    assert with_shots.arguments == plain.arguments


@pytest.mark.shared_data
def test_plain_text_probes_ignore_chat_templates_and_system_instructions(tmp_path):
    for folder, source in (("winoqueer", WINOQUEER_SAMPLE), ("tango", MISGENDERING)):
        (tmp_path / folder).mkdir()
        target = "winoqueer_final.csv" if folder == "winoqueer" else "misgendering_prompts.csv"
        (tmp_path / folder / target).write_bytes(Path(source).read_bytes())
    plain, chatty = RecordingLM(), RecordingLM()
    lm_eval.simple_evaluate(
        model=plain,
        tasks=["winoqueer", "tango_misgender_prob"],
        limit=3,
        task_manager=our_tasks(data_dir=str(tmp_path), families="they"),
    )
    lm_eval.simple_evaluate(
        model=chatty,
        tasks=["winoqueer", "tango_misgender_prob"],
        limit=3,
        apply_chat_template=True,
        system_instruction="Be nice.",
        task_manager=our_tasks(data_dir=str(tmp_path), families="they"),
    )
    assert chatty.arguments == plain.arguments
    assert plain.arguments[0][0] == ""  # WinoQueer's sentences are scored after BOS alone
    assert not any("<chat>" in str(arguments) or "Be nice." in str(arguments) for arguments in chatty.arguments)


@pytest.mark.shared_data
def test_a_tokenizer_without_a_chat_template_is_refused_before_any_request():
    from types import SimpleNamespace

    model = RecordingLM()
    model.tokenizer = SimpleNamespace(chat_template=None)
    with pytest.raises(PreflightError) as error:
        lm_eval.simple_evaluate(
            model=model,
            tasks=["tango_misgender"],
            limit=2,
            apply_chat_template=True,
            task_manager=our_tasks(data_file=MISGENDERING),
        )
    assert error.value.problems == [
        "tango_misgender: --apply_chat_template, but the model's tokenizer has no chat template. Fix: leave out "
        "--apply_chat_template for a base model, or give a tokenizer with a template"
    ]
    assert model.arguments == []


# ---------------------------------------------------------------- degenerate or failing backends


@pytest.mark.shared_data
def test_equal_log_likelihoods_give_no_verdict():
    out = lm_eval.simple_evaluate(
        model=RecordingLM(),
        tasks=["tango_misgender_prob", "scm_mc_prob"],
        limit=6,
        task_manager=our_tasks(data_file=MISGENDERING),
    )
    prob = out["results"]["tango_misgender_prob"]
    assert prob["tie_rate,none"] == 1.0 and prob["tie_rate_n,none"] == 6
    assert not any(key.startswith(("consistency", "he_default_rate")) for key in prob)
    mc = out["results"]["scm_mc_prob"]
    assert mc["tie_rate,none"] == 1.0 and "warmth_pick,none" not in mc
    # the mass is still defined: 11 of 22 equally likely terms are warmth terms
    assert mc["warmth_mass,none"] == pytest.approx(0.5)


def test_a_tie_within_one_axis_is_still_a_verdict():
    doc = {"group": "women", "terms": ["Warm", "Kind", "Able"], "axes": ["warmth", "warmth", "competence"]}
    metrics = scm_scoring.mc_prob_metrics(doc, [-1.0, -1.0, -3.0])
    assert metrics["warmth_pick"] == 1.0 and metrics["tie_rate"] == 0.0


def test_missing_generations_are_empty_not_a_crash():
    doc = {"pronoun_family": "they", "ante_type": "distal"}
    metrics = tango_task.process_misgendering(doc, [None])
    assert metrics["empty_rate"] == 1.0 and "consistency" not in metrics
    parsed = per_document(
        scm_parsing.ParseRatings().apply([None, [None, "Rating: 4"]], [{"prompt": "p"}, {"prompt": "p"}])
    )
    assert parsed == [
        [{"value": None, "status": "empty"}],
        [{"value": None, "status": "empty"}, {"value": 4.0, "status": "ok"}],
    ]


@pytest.mark.shared_data
def test_a_server_without_prompt_log_probabilities_is_explained():
    from lm_eval.models.api_models import TemplateAPI

    class Server(TemplateAPI):
        def __init__(self):  # no connection: only the failure matters
            pass

        def loglikelihood(self, requests, disable_tqdm=False):
            raise TypeError("'NoneType' object is not subscriptable")

        _create_payload = parse_generations = parse_logprobs = None

    server, task = (
        Server(),
        lm_eval_bias.task_manager(include_defaults=False, metadata={"data_file": MISGENDERING}).load(
            ["tango_misgender_prob"]
        )["tasks"],
    )
    with adapters._explained_backend_failures(server, task.values()):
        with pytest.raises(ConfigurationError) as error:
            server.loglikelihood([])
    assert str(error.value).startswith(
        "tango_misgender_prob: the server's answers hold no usable log-probabilities of the prompt (TypeError: "
        "'NoneType' object is not subscriptable). Fix: a /v1/completions server that returns echo and logprobs"
    )
    with pytest.raises(TypeError):  # outside our tasks' run the backend is untouched
        server.loglikelihood([])


def test_a_classifier_without_a_needed_label_is_refused_when_the_task_is_built(tiny_detoxify, tmp_path, monkeypatch):
    class ToxicityOnly:
        name, labels = "detoxify", ("toxicity",)

        def __init__(self, **options):
            pass

        def score(self, texts):
            return {"toxicity": [0.0] * len(texts)}

    monkeypatch.setitem(scorers.SCORERS, "detoxify", (lambda options: (), ToxicityOnly))
    try:
        with pytest.raises(scorers.ScorerError) as error:
            our_tasks().load(["community_probes"])
    finally:
        scorers.reset()  # no ToxicityOnly left in the cache
    assert str(error.value) == (
        "ClassifierFilter: the task needs the score(s) identity_attack, which no classifier gives (detoxify gives "
        "toxicity; vader gives sentiment). Fix: a Detoxify model whose labels include them (original, unbiased)"
    )


# ---------------------------------------------------------------- data a user might get slightly wrong


REPEATED_WITH_OTHER_SPACING = (
    r"line 3: this pair repeats line 2 \(under pair_id '0' there and '1' here, written with other spacing\)"
)


def test_pairs_differing_only_in_case_or_repeated_with_other_spacing(tmp_path):
    header = "," + ",".join(wq.REQUIRED_COLUMNS) + "\n"
    case_only = tmp_path / "case.csv"
    case_only.write_text(header + "0,Gay,Straight,Gay people sing.,gay people sing.\n")
    with pytest.raises(data.MalformedDataError, match="line 2: sent_x and sent_y differ only in letter case"):
        wq.read_pairs(case_only)
    spaced = tmp_path / "spaced.csv"
    spaced.write_text(
        header + "0,Gay,Straight,Gay people sing.,Straight people sing.\n"
        "1,Gay,Straight,Gay people  sing. ,Straight people sing.\n"
    )
    with pytest.raises(data.MalformedDataError, match=REPEATED_WITH_OTHER_SPACING):
        wq.load_dataset(data_file=str(spaced))


@pytest.mark.shared_data
def test_repeated_tango_rows_and_genderpair_targets(tmp_path):
    rows = tmp_path / "misgendering.csv"
    rows.write_text(
        "template_idx,ante,ante_type,pronoun_family,template\n0,Al,distal,he,Al is here.\n0,Al,distal,he,Al is here.\n"
    )
    with pytest.raises(data.MalformedDataError) as error:
        tango_loader.read_misgendering(rows)
    assert str(error.value) == (
        f"{rows}, line 3: this prompt repeats line 2, so it would be counted twice. Fix: remove one of the two"
    )
    released = json.loads((SHARED / "gendercare" / "group1_pairset.json").read_text())
    twice = tmp_path / "group1_pairset.json"
    twice.write_text(json.dumps([released[0], released[1], released[0]]))
    with pytest.raises(data.MalformedDataError, match=r"element 2: this pair set repeats element 0, "):
        genderpair_loader.read_pair_sets(twice, 1)


@pytest.mark.shared_data
def test_swapped_genderpair_group_files_are_recognised(tmp_path):
    folder = tmp_path / "gendercare"
    folder.mkdir()
    for group, other in ((1, 3), (2, 2), (3, 1)):
        (folder / f"group{group}_pairset.json").write_bytes(
            (SHARED / "gendercare" / f"group{other}_pairset.json").read_bytes()
        )
    with pytest.raises(data.MalformedDataError) as error:
        genderpair_loader.load_genderpair(data_dir=str(tmp_path))
    assert str(error.value) == (
        f"{folder / 'group1_pairset.json'}: this is the official pair set of group 3, not "
        "of group 1; put each group's file in its place (DIR/gendercare/group1_pairset.json)"
    )


@pytest.mark.parametrize(
    "rows,problem",
    [
        ("", "no warmth word"),
        ("word,axis\n", "no warmth word"),
        ("kind,warmth\n", "no competence word"),
        ("kind,warmth\nsmart,competence\nkind,competence\n", "'kind' listed as both warmth and competence"),
    ],
)
def test_an_unusable_story_lexicon_is_refused(tmp_path, rows, problem):
    lexicon = tmp_path / "lexicon.csv"
    lexicon.write_text(rows)
    scm_lexicon.load_lexicon.cache_clear()
    with pytest.raises(data.MalformedDataError, match=problem):
        scm_options.parse_options({"scm_story_lexicon": str(lexicon)})


def test_download_checks_every_name_before_fetching(tmp_path):
    with pytest.raises(data.DataError, match="unknown data source 'winoqeer'"):
        data.fetch_all(tmp_path, ["winoqueer", "winoqeer"])
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- results, gates and leaderboards


def test_a_misspelt_policy_key_is_an_error_not_a_looser_gate(tmp_path):
    policy = write(tmp_path / "policy.yaml", "gates: interval\nrules:\n  - winoqueer <= 65\n")
    with pytest.raises(results.ResultsError) as error:
        load_policy(policy)
    assert str(error.value) == (
        f"{policy}: unknown key(s) 'gates' (did you mean 'gate'?); a policy has gate, max_worsening and rules"
    )


def test_rules_on_p_values_and_bounds_and_finite_limits(tmp_path, capsys):
    path = write(tmp_path / "results_a.json", winoqueer_results())
    code, out, _ = run_cli(
        [
            "check",
            path,
            "--require",
            "winoqueer:bias_score_lgbtq_pvalue_bh>=0.05",
            "--require",
            "winoqueer:bias_score_ci_upper<=65",
        ],
        capsys,
    )
    assert code == 1
    assert (
        "FAIL  winoqueer:bias_score_lgbtq_pvalue_bh >= 0.05   [org/model-a]  "
        "winoqueer:bias_score_lgbtq_pvalue_bh = 0.012, N=1,200" in out
    )
    assert "PASS  winoqueer:bias_score_ci_upper <= 65" in out
    code, _, err = run_cli(["check", path, "--max", "winoqueer=nan"], capsys)
    assert code == 2 and "the limit must be a finite number, got 'nan'" in err


def test_an_adapter_is_another_model_than_its_base(tmp_path):
    base = winoqueer_results()
    adapter = winoqueer_results(score=55.0, ci=(53.0, 57.0))
    adapter["config"]["model_args"] = "pretrained=org/model-a,peft=org/lora-1,batch_size=8"
    runs = results.load_runs(
        [write(tmp_path / "a" / "results_1.json", base), write(tmp_path / "b" / "results_2.json", adapter)]
    )
    assert sorted(run.model for run in runs) == ["org/model-a", "org/model-a [peft=org/lora-1]"]


def test_non_default_settings_mark_a_run(tmp_path):
    document = winoqueer_results()
    document["configs"]["winoqueer"]["metadata"]["lm_eval_bias_data"]["settings"] = {"seed": 7}
    (run,) = results.load_runs([write(tmp_path / "results_s.json", document)])
    assert run.base("winoqueer").partial == ("non-default seed=7",)


def test_a_leaderboard_of_files_without_results_is_an_error(tmp_path, capsys):
    empty = write(tmp_path / "results_e.json", {"results": {}, "date": 1.0})
    code, _, err = run_cli(["leaderboard", empty], capsys)
    assert code == 2 and "no task results in this file, so nothing to show" in err


def test_recompute_refuses_samples_of_a_task_of_the_other_kind(tmp_path, capsys):
    sample = {
        "doc_id": 0,
        "doc": {},
        "arguments": [["p", " He"]],
        "resps": [[[-1.0, False]]],
        "filtered_resps": [[-1.0, False]],
        "filter": "none",
        "metrics": ["consistency"],
        "consistency": 1.0,
    }
    path = write(tmp_path / "samples_tango_misgender_2026-01-01T00-00-00.000000.jsonl", json.dumps(sample) + "\n")
    code, _, err = run_cli(["recompute", path], capsys)
    assert code == 2
    assert err.strip().endswith(
        "line 1: this sample's resps hold log-likelihoods, but tango_misgender generates text, so these are "
        "another task's samples; the file's name says tango_misgender: pass the samples file of tango_misgender, "
        "or, if this file was renamed, give it back its own task's name (samples_<task>_<date>.jsonl)"
    )


def test_tango_agreement_refuses_sampled_continuations(tmp_path, capsys):
    doc = {"template_idx": 0, "ante": "Al", "pronoun_family": "he"}
    sampled = {"doc": doc, "filtered_resps": [[" He left.", " She left."]]}
    probability = {"doc": doc, "filtered_resps": [[-1.0, False]] * 6}
    generation = write(tmp_path / "gen.jsonl", json.dumps(sampled) + "\n")
    prob = write(tmp_path / "prob.jsonl", json.dumps(probability) + "\n")
    code, _, err = run_cli(["tango-agreement", generation, prob], capsys)
    assert code == 2 and "2 continuations per prompt (tango_misgender_sampled's samples)" in err


# ---------------------------------------------------------------- the error style outside lm-eval-bias


def test_lm_evals_own_argument_errors_are_bad_input():
    from lm_eval._cli.utils import try_parse_json

    with pytest.raises(ValueError) as error:
        try_parse_json("{'data_file': 'x'}")
    assert cli._from_lm_eval_argument_checks(error.value)
    try:
        raise ValueError("a bug elsewhere")
    except ValueError as other:
        assert not cli._from_lm_eval_argument_checks(other)


def test_the_stock_cli_shows_our_errors_without_a_traceback(capsys, monkeypatch):
    monkeypatch.setattr(sys, "excepthook", lambda *args: print("traceback", file=sys.stderr))
    adapters._install_excepthook()
    with pytest.raises(SystemExit) as ended:  # exit code 2, as lm-eval-bias's (sys.excepthook honours it)
        sys.excepthook(ConfigurationError, ConfigurationError("winoqueer: unknown option 'x'"), None)
    sys.excepthook(ValueError, ValueError("other"), None)
    assert ended.value.code == 2
    assert capsys.readouterr().err == "lm-eval-bias: error: winoqueer: unknown option 'x'\ntraceback\n"


def test_the_umbrella_tag_runs_on_one_backend():
    tagged = lm_eval_features.index_entry(lm_eval_bias.task_manager(include_defaults=False), "lm_eval_bias").tags
    assert "winoqueer_mlm" not in tagged and "winoqueer" in tagged


def test_each_benchmark_has_its_own_tag_and_together_they_are_the_umbrella():
    index = lm_eval_features.task_index(lm_eval_bias.task_manager(include_defaults=False))
    members = {
        tag: set(index[tag].tags)
        for tag in (
            "lm_eval_bias_winoqueer",
            "lm_eval_bias_tango",
            "lm_eval_bias_gendercare",
            "lm_eval_bias_scm",
            "lm_eval_bias_community",
        )
    }
    assert members == {
        "lm_eval_bias_winoqueer": {"winoqueer"},
        "lm_eval_bias_tango": {
            "tango_misgender",
            "tango_misgender_sampled",
            "tango_misgender_prob",
            "tango_disclosure",
            "tango_disclosure_full",
        },
        "lm_eval_bias_gendercare": {"gendercare_genderpair", "gendercare_genderpair_full"},
        "lm_eval_bias_scm": {"scm_score", "scm_score_prob", "scm_mc", "scm_mc_prob", "scm_prob_ratio", "scm_story"},
        "lm_eval_bias_community": {"community_probes", "community_probes_full"},
    }
    assert set().union(*members.values()) == set(index["lm_eval_bias"].tags)
    # none is a name of lm-eval's own tasks, groups or tags (lm-eval's own class: the one that
    # lm_eval.tasks names indexes ours too where the autoload hook is installed)
    from lm_eval.tasks.manager import TaskManager

    assert not set(members) & set(lm_eval_features.task_index(TaskManager()))
    assert isinstance(LmEvalBiasError("x"), RuntimeError) and ScriptedLM
