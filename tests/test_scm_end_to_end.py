"""SCM tasks run by lm-eval: exact numbers with a scripted model, chat-template handling, and the
real ``hf`` backend with a tiny GPT-2."""

import collections
import json
import math

import lm_eval
import pytest

import lm_eval_bias
from fake_models import ScriptedLM
from helpers import per_document
from lm_eval_bias.benchmarks.scm import constants, options, prompts, survey

pytestmark = pytest.mark.e2e  # runs the package end to end: `pytest -m "not slow"` includes it

TASKS = ["scm_score", "scm_score_prob", "scm_mc", "scm_mc_prob", "scm_prob_ratio", "scm_story"]

# The scripted model's ratings: women warm, men competent, everyone else 3; heterosexual refuses.
RATING = {("women", "warmth"): 5, ("women", "competence"): 2, ("men", "warmth"): 2, ("men", "competence"): 4}
STORIES = {
    "women": "She was a kind nurse with a warm smile and a caring heart.",
    "men": "He was a capable engineer, smart and capable, with a calm smile.",
}


def rating_of(group: str, axis: str) -> int:
    return RATING.get((group, axis), 3)


class SCMScriptedLM(ScriptedLM):
    """Answers each SCM prompt according to the group and term it is about.

    Score prompts: "Rating: r" on odd calls and, for women's warmth terms, a refusal on even
    calls (so half refused); heterosexual prompts are always refused. Multiple choice:
    women "Nurturing", men "Answer: Assertive", nonbinary an echo of the list, others "Kind".
    Log-likelihoods: the scripted rating is the only likely answer; "Kind" for women and
    "Able" for men; in the probability templates warmth terms are 3x (women), 1/3x (men) or
    1x as likely as competence terms.
    """

    def __init__(self):
        super().__init__()
        chosen = options.parse_options({})
        self.scores = {d["prompt"]: d for d in prompts.score_docs(chosen)}
        self.choices = {d["prompt"]: d["group"] for d in prompts.mc_docs(chosen, 1)}
        self.stories = {d["prompt"]: d["group"] for d in prompts.story_docs(chosen)}
        self.ratios = {d["context"]: d["group"] for d in prompts.prob_ratio_docs(chosen)}
        self.calls = collections.Counter()
        self.contexts = []

    def _generate(self, prompt: str) -> str:
        self.calls[prompt] += 1
        if prompt in self.scores:
            doc = self.scores[prompt]
            if (
                doc["group"] == "heterosexual"
                or (doc["group"], doc["axis"]) == ("women", "warmth")
                and self.calls[prompt] % 2 == 0
            ):
                return "I'm sorry, but I cannot rate groups of people; that would perpetuate stereotypes."
            return f"Rating: {rating_of(doc['group'], doc['axis'])}\n\nKeywords and descriptions:\n1. Caring: ..."
        if prompt in self.choices:
            group = self.choices[prompt]
            return {"women": "Nurturing", "men": "Answer: Assertive", "nonbinary": ", ".join(constants.TERMS)}.get(
                group, "Kind"
            )
        if prompt not in self.stories:  # a prompt realised with other options
            return "Kind"
        return STORIES.get(self.stories[prompt], "They lived in a town by the sea and liked music.")

    def generate_until(self, requests, disable_tqdm=False):
        self.generation_prompts += [request.args[0] for request in requests]
        return [self._generate(request.args[0]) for request in requests]

    def _loglikelihood(self, context: str, continuation: str) -> float:
        self.contexts.append(context)
        prompt = context.removesuffix("Rating:").removesuffix("Answer:").removesuffix("\n")
        if prompt in self.scores:
            doc = self.scores[prompt]
            return 0.0 if continuation == f" {rating_of(doc['group'], doc['axis'])}" else -60.0
        if prompt in self.choices:
            favourite = {"women": " Kind", "men": " Able"}.get(self.choices[prompt])
            return 0.0 if continuation == favourite else -20.0
        group = self.ratios[context]
        term = continuation.strip().capitalize()
        warm_bias = {"women": math.log(3), "men": -math.log(3)}.get(group, 0.0)
        return -1.0 if constants.AXIS_OF_TERM[term] == "warmth" else -1.0 - warm_bias

    def loglikelihood(self, requests, disable_tqdm=False):
        return [(self._loglikelihood(*request.args), False) for request in requests]


def task_manager(**metadata):
    """Our tasks only: indexing lm-eval's 14,000 built-in tasks takes seconds per call."""
    return lm_eval_bias.task_manager(include_defaults=False, metadata=metadata)


def evaluate(model, tasks, **kwargs):
    return lm_eval.simple_evaluate(model=model, tasks=tasks, log_samples=True, task_manager=task_manager(), **kwargs)


@pytest.fixture(scope="module")
def scripted_run():
    model = SCMScriptedLM()
    return model, evaluate(model, TASKS)


def test_score_task_exact_numbers(scripted_run):
    model, output = scripted_run
    results = output["results"]["scm_score"]
    assert results["sample_len"] == 154
    assert len(model.generation_prompts) >= 1540  # 10 samples per prompt
    assert results["warmth_women,parsed"] == 5.0 and results["competence_women,parsed"] == 2.0
    assert results["competence_men,parsed"] == 4.0 and results["warmth_lesbians,parsed"] == 3.0
    assert results["refusal_rate_women,parsed"] == pytest.approx(0.25)  # half of the warmth samples
    assert results["refusal_rate_heterosexual,parsed"] == 1.0
    assert "warmth_heterosexual,parsed" not in results  # refusals are never scored
    assert results["explicit_refusal_rate,parsed"] == pytest.approx((11 * 0.5 + 22) / 154)
    assert results["warmth_minus_competence_women_gap,parsed"] == pytest.approx(3.0)
    assert results["warmth_minus_competence_men_gap,parsed"] == pytest.approx(-2.0)
    # identical ratings on few terms: the betting interval on the 1-5 scale, never one read as a proportion's
    assert (results["warmth_women_ci_lower,parsed"], results["warmth_women_ci_upper,parsed"]) == (
        pytest.approx(3.476190744192631),
        5.0,
    )
    # the survey correlation over the 6 groups with ratings
    values = [(g, a, rating_of(g, a)) for g in constants.GROUPS[:-1] for a in constants.AXES]
    assert results["survey_r,parsed"] == pytest.approx(survey.survey_r(values))
    assert results["survey_r_warmth,parsed"] == pytest.approx(survey.survey_r_warmth(values))
    assert (
        results["survey_r_gap_ci_lower,parsed"]
        < results["survey_r_gap,parsed"]
        < results["survey_r_gap_ci_upper,parsed"]
    )
    (sample, *_) = output["samples"]["scm_score"]
    (parsed,) = per_document(sample["filtered_resps"])  # the parse filter's answer to the one request
    assert len(parsed) == 10
    assert parsed[0] == {"value": 5.0, "status": "ok"}


def test_expected_rating_task_matches_the_scripted_ratings(scripted_run):
    model, output = scripted_run
    results = output["results"]["scm_score_prob"]
    assert results["sample_len"] == 154
    assert results["warmth_women,none"] == pytest.approx(5.0)
    assert results["warmth_heterosexual,none"] == pytest.approx(3.0)  # no refusal without generation
    assert results["competence_men,none"] == pytest.approx(4.0)
    assert not any(k.startswith("refusal") for k in results)
    values = [(g, a, rating_of(g, a)) for g in constants.GROUPS for a in constants.AXES]
    assert results["survey_r_competence,none"] == pytest.approx(survey.survey_r_competence(values))
    # the cue starts its own line after the prompt (no chat template)
    first = prompts.score_docs(options.parse_options({}))[0]["prompt"]
    assert first + "\nRating:" in model.contexts


def test_multiple_choice_tasks(scripted_run):
    _, output = scripted_run
    generated = output["results"]["scm_mc"]
    assert generated["sample_len"] == 70
    assert generated["warmth_pick_women,parsed"] == 1.0 and generated["warmth_pick_men,parsed"] == 0.0
    assert generated["refusal_rate_nonbinary,parsed"] == 1.0  # the list echoed back
    assert "warmth_pick_nonbinary,parsed" not in generated
    # Clopper-Pearson, no warm pick of 10: the upper bound solves (1 - p)^10 = 0.025
    assert generated["warmth_pick_men_ci_upper,parsed"] == pytest.approx(1 - 0.025 ** (1 / 10))
    assert generated["refusal_rate,parsed"] == pytest.approx(1 / 7)
    scored = output["results"]["scm_mc_prob"]
    assert scored["sample_len"] == 7
    assert scored["warmth_pick_women,none"] == scored["warmth_pick_norm_women,none"] == 1.0
    assert scored["warmth_pick_men,none"] == 0.0
    assert scored["warmth_mass_women,none"] == pytest.approx(1.0)


def test_probability_ratio_task(scripted_run):
    _, output = scripted_run
    results = output["results"]["scm_prob_ratio"]
    assert results["sample_len"] == 35
    assert results["warmth_ratio_women,none"] == pytest.approx(0.75)
    assert results["warmth_ratio_men,none"] == pytest.approx(0.25)
    assert results["warmth_ratio_gay_men,none"] == pytest.approx(0.5)
    assert results["warmth_ratio,none"] == pytest.approx((0.75 + 0.25 + 5 * 0.5) / 7)
    assert -1 <= results["survey_r_gap,none"] <= 1


def test_story_task(scripted_run):
    _, output = scripted_run
    results = output["results"]["scm_story"]
    assert results["sample_len"] == 35
    assert results["refusal_rate,analysed"] == 0.0
    assert results["warmth_word_share_women,analysed"] > results["competence_word_share_women,analysed"]
    assert results["competence_word_share_men,analysed"] > results["warmth_word_share_men,analysed"]
    # nonbinary's stories are the same as the sexuality groups' but it is compared with women and
    # men only, so it has distinctive words; the sexuality groups' stories are identical: N/A
    assert results["warmth_word_share_gay_men,analysed"] == "N/A"
    samples = output["samples"]["scm_story"]
    women = next(s for s in samples if s["doc"]["group"] == "women")
    (analysis,) = per_document(women["filtered_resps"])
    assert "kind" in analysis["top_words"] and "kind" in [w for w, *_ in analysis["pairs"]["vs_men"]]
    assert set(analysis["pairs"]) == {"vs_men", "vs_nonbinary"}


def test_results_have_no_nan(scripted_run):
    _, output = scripted_run
    for task in TASKS:
        for name, value in output["results"][task].items():
            if isinstance(value, float):
                assert math.isfinite(value), (task, name)


class ChatSCMScriptedLM(SCMScriptedLM):
    tokenizer_name = "scripted"

    def apply_chat_template(self, chat_history, add_generation_prompt=True):
        text = "".join(f"<{m['role']}>{m['content']}</{m['role']}>" for m in chat_history)
        if add_generation_prompt:
            return text + "<assistant>"
        return text.removesuffix("</assistant>")

    def _loglikelihood(self, context, continuation):
        self.contexts.append(context)
        return -1.0


def test_chat_template_is_followed_except_by_the_sentence_probe():
    model = ChatSCMScriptedLM()
    evaluate(model, ["scm_score_prob", "scm_prob_ratio"], apply_chat_template=True, limit=7)
    assert any(
        c.startswith("<user>As viewed by society, how warm") and c.endswith("<assistant>Rating:")
        for c in model.contexts
    )
    assert "Women are more" in model.contexts  # the probability templates stay plain text
    model = ChatSCMScriptedLM()
    tm = task_manager(scm_chat_template=True)
    lm_eval.simple_evaluate(model=model, tasks=["scm_prob_ratio"], apply_chat_template=True, limit=7, task_manager=tm)
    assert "<user>Women are more</user><assistant>" in model.contexts


def test_options_reach_the_prompts():
    model = SCMScriptedLM()
    tm = task_manager(scm_groups="women,men", scm_mc_samples=3, scm_group_forms={"women": {"label": "female"}})
    output = lm_eval.simple_evaluate(model=model, tasks=["scm_mc"], task_manager=tm)
    assert output["results"]["scm_mc"]["sample_len"] == 6
    assert any("person from the female sexual orientation" in p for p in model.generation_prompts)


def test_unknown_option_stops_the_run():
    with pytest.raises(Exception, match="unknown option"):
        lm_eval.simple_evaluate(model=SCMScriptedLM(), tasks=["scm_score"], task_manager=task_manager(scm_repeats=3))


def test_tiny_gpt2_runs_every_task_with_the_hf_backend(tmp_path, tiny_gpt2_long_context):
    """The real hf path: sampling with repeats, log-likelihood choices, results without NaN.

    In-process with our tasks only (the CLI path is the same code, tested for TANGO). A random
    model can give every group the same expected rating: then the survey correlation is N/A,
    not NaN.
    """
    output = lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_gpt2_long_context},dtype=float32",
        device="cpu",
        batch_size=32,
        tasks=TASKS,
        limit=14,
        gen_kwargs="max_gen_toks=6",
        log_samples=True,
        random_seed=1,
        numpy_random_seed=1,
        torch_random_seed=1,
        task_manager=task_manager(scm_mc_samples=2),
    )
    results = json.loads(json.dumps(output["results"]), parse_constant=lambda c: pytest.fail(f"bare {c}"))
    assert results["scm_score"]["sample_len"] == 14
    assert output["configs"]["scm_score"]["repeats"] == 10
    assert output["configs"]["scm_score"]["generation_kwargs"]["max_gen_toks"] == 6
    assert 0.0 <= results["scm_score"]["refusal_rate,parsed"] <= 1.0
    (sample, *_) = output["samples"]["scm_score"]
    assert len(sample["resps"][0]) == len(per_document(sample["filtered_resps"])[0]) == 10
    prob = results["scm_score_prob"]
    for group in constants.GROUPS:
        assert 1.0 <= prob[f"warmth_{group},none"] <= 5.0
        # 1 prompt of ratings per group: below the bootstrap-t's 30, the betting interval on the 1-5 scale
        low, high = prob[f"warmth_{group}_ci_lower,none"], prob[f"warmth_{group}_ci_upper,none"]
        assert 1.0 <= low <= prob[f"warmth_{group},none"] <= high <= 5.0
    assert prob["survey_r,none"] == "N/A" or -1 <= prob["survey_r,none"] <= 1
    assert results["scm_mc"]["sample_len"] == 14 and results["scm_mc_prob"]["sample_len"] == 7
    ratio = results["scm_prob_ratio"]
    assert all(0.0 < ratio[f"warmth_ratio_{g},none"] < 1.0 for g in constants.GROUPS)
    assert -1 <= ratio["survey_r_gap,none"] <= 1  # short sentences: the groups differ
    story = output["samples"]["scm_story"]
    assert len(story) == 14 and len(story[0]["resps"][0]) == 5
    assert "top_words" in per_document(story[0]["filtered_resps"])[0]
