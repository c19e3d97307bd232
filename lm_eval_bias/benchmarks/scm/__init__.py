"""Stereotype Content Model (SCM) probes for 7 gender and sexuality groups.

Source: Ruby Ostrow, *Shrill Girls and Soy Boys: Measuring Gender and
Sexuality Stereotypes in LLMs*, MSc thesis, University of Edinburgh, 2024.
The thesis asks models how warm and how competent society thinks each group
is, with 22 key terms (11 per axis), and compares the answers with a survey of
97 people. Everything a task needs (groups, terms, templates, survey means) is
a constant (in ``constants``), copied from the thesis, so the tasks build their prompts in
code and need no data download.

Tasks (YAML in ``tasks/scm/``):

* ``scm_score``: the thesis's score prompt for every group x term, sampled
  several times; ratings parsed from the text, refusals counted;
* ``scm_score_prob``: the same prompts without generation, the
  probability-weighted rating after "Rating:" (our extension);
* ``scm_mc`` / ``scm_mc_prob``: the multiple-choice prompt with the 22 terms,
  generated and parsed (the thesis) or scored by log-likelihood (ours);
* ``scm_prob_ratio``: the thesis's probability method, the warmth share of the
  summed key-term probabilities in 5 sentence templates;
* ``scm_story``: story prompts, and the words that distinguish one group's
  stories from another's (log-odds ratio with an informative Dirichlet prior).

Options come from task metadata keys starting with ``scm_`` (see
``OPTION_DEFAULTS``); other keys, which lm-eval also passes (model arguments,
other benchmarks' options), are ignored.

The code is split by concern: ``constants`` (the thesis's tables), ``options`` (``scm_*``
metadata), ``prompts`` (prompt realisation and each task's documents), ``parsing`` (ratings and
chosen terms read from generations, and the filters that do it), ``metrics`` (per-document
metrics and the survey agreement), ``lexicon`` and ``stories`` (the story analysis), and
``task`` (lm-eval's hooks and the task class). Every name is available here, under
``lm_eval_bias.benchmarks.scm``, which is the path the task YAMLs use.
"""

from lm_eval_bias.benchmarks.scm.constants import (
    ADJECTIVE_STORY_PROMPTS,
    AXES,
    AXIS_OF_TERM,
    COMPETENCE_TERMS,
    DEFAULT_FORMS,
    FORM_KEYS,
    GENDER_GROUPS,
    GROUPS,
    MC_PROMPT,
    PROB_TEMPLATES,
    SCORE_PROMPT,
    SEXUALITY_GROUPS,
    SINGULAR_TEMPLATES,
    STORY_PROMPTS,
    SURVEY_MEANS,
    TERMS,
    WARMTH_TERMS,
)
from lm_eval_bias.benchmarks.scm.lexicon import COMPETENCE_WORDS, STOPWORDS, WARMTH_WORDS, load_lexicon
from lm_eval_bias.benchmarks.scm.metrics import (
    expected_rating,
    mc_metrics,
    mc_prob_metrics,
    prob_ratio_metrics,
    process_mc,
    process_mc_prob,
    process_prob_ratio,
    process_score,
    process_score_prob,
    rating_ci_lower,
    rating_ci_upper,
    rating_metrics,
    score_metrics,
    softmax,
    warmth_ratio,
)
from lm_eval_bias.benchmarks.scm.options import OPTION_DEFAULTS, OPTIONS, TERM_ORDERS, Option, Options, parse_options
from lm_eval_bias.benchmarks.scm.parsing import (
    ParseChoices,
    Parsed,
    ParseRatings,
    is_explicit_refusal,
    parse_choice,
    parse_rating,
    strip_echo,
)
from lm_eval_bias.benchmarks.scm.prompts import (
    capitalise,
    mc_docs,
    mc_prompt,
    ordered_terms,
    prob_context,
    prob_ratio_docs,
    score_docs,
    score_prompt,
    story_docs,
    story_prompt,
    with_article,
)
from lm_eval_bias.benchmarks.scm.stories import (
    LogOdds,
    StoryAnalysis,
    analyse_stories,
    background_prior,
    comparison_pairs,
    corpus_value,
    distinctive_words,
    is_story_refusal,
    log_odds_dirichlet,
    process_story,
    story_metrics,
    story_words,
)
from lm_eval_bias.benchmarks.scm.survey import (
    RELATIVE_SURVEY_METRICS,
    SURVEY_METRICS,
    SurveyAggregation,
    survey_correlation,
    survey_pairs,
    survey_r,
    survey_r_ci_lower,
    survey_r_ci_upper,
    survey_r_competence,
    survey_r_competence_ci_lower,
    survey_r_competence_ci_upper,
    survey_r_gap,
    survey_r_gap_ci_lower,
    survey_r_gap_ci_upper,
    survey_r_warmth,
    survey_r_warmth_ci_lower,
    survey_r_warmth_ci_upper,
)
from lm_eval_bias.benchmarks.scm.task import (
    RATING_BASES,
    ScmTask,
    doc_terms,
    doc_to_text_with_cue_line,
    is_rating_interval,
    load_mc,
    load_mc_prob,
    load_prob_ratio,
    load_score,
    load_story,
)
