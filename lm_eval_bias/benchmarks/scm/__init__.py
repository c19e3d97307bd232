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
``options.OPTION_DEFAULTS``); other keys, which lm-eval also passes (model arguments,
other benchmarks' options), are ignored.

The code is split by concern: ``record`` (the benchmark's record and the report's constants),
``constants`` (the thesis's tables), ``options`` (``scm_*`` metadata), ``prompts`` (prompt
realisation and each task's documents), ``loader`` (lm-eval's ``custom_dataset`` loaders),
``parsing`` (ratings and chosen terms read from generations, and the filters that do it),
``scoring`` (per-document metrics and the rating intervals), ``survey`` (agreement with the survey),
``lexicon`` and ``stories`` (the story analysis), and ``task`` (lm-eval's ``process_results`` and
prompt hooks, and the task class). The task YAMLs name each hook in the module that defines it
(``lm_eval_bias.benchmarks.scm.loader.load_score``). This module imports nothing: the registry
reads ``record`` without loading the task code.

How the values are computed:

- Ratings (``scm_score``) are read in this order: a labelled rating (``Rating: 3``,
  ``**Rating:** 4``, ``my rating is 2``, ``Rating: three``); ``3/5`` or ``3 out of 5``; a rating verb and
  a number (``I would rate them a 4``, ``I'd put it at 3``); a first line that is only a number. The
  prompt (if echoed) and its scale (``5-point scale``, ``1=not at all``, ``from 1 to 5``, ...) are
  removed first, so their digits never count; numbered keyword lists (``1. Tolerance: ...``) do
  not match; a range (``3-4``) gives its midpoint; values outside 1-5 are not ratings. The two
  weaker forms are not accepted in an answer that also refuses. Each prompt's rating is the mean
  of its valid samples; a group's axis mean is the mean over its terms (the thesis: "the mean
  score across all key terms for each axis").
- Expected rating (``scm_score_prob``): E = sum k p(k), p the softmax of the five answers'
  log-likelihoods (continuations " 1" ... " 5") after ``"\\nRating:"`` (the assistant turn's start
  with a chat template). A tokenizer that splits the space from the digit (SmolLM2's does) gives
  all five the same space factor, which the softmax cancels.
- Multiple-choice answers (``scm_mc``): terms match case- and hyphen-insensitively
  ("good natured", "Skilful"); echoed prompts and echoed lists (3+ terms in a row) are set aside;
  then a term after a choice cue ("Answer:", "I would choose"), the only term named, a term after
  "is/as", or a first line that is only a term. "able to", "kind of", "understanding of" are not
  the terms.
- Probability ratio: each term is scored whole (all its tokens), as the continuation
  ``" warm"`` of the template's text before the slot ("Women are more"); per template
  W = sum P(warmth terms) / sum P(all 22), computed from log-likelihoods with a shared offset (so
  renormalising over the 22 terms changes nothing), then averaged over templates.
- Stories: content words are lower-cased regex tokens (inner hyphens and apostrophes kept,
  possessive 's removed) minus a stopword list of function words. For the thesis's 9 comparisons
  (women-men, women-nonbinary, men-nonbinary and the 6 pairs of the 4 sexuality groups) each
  word's log-odds ratio is estimated with an informative Dirichlet prior (Monroe, Colaresi and
  Quinn 2008, "Fightin' Words"): prior pseudo-counts a_w = 1000 x the word's share of all
  stories of the run, z = delta / sqrt(1/(y + a_w) + 1/(y' + a_w)). A group's distinctive words
  in a comparison are those used at least 5 times in the two groups together with z >= 1.96, the
  25 highest; its list is the union over its comparisons (as the thesis: "The top OR words from
  all lists for a given group are combined, with duplicates removed"). Warmth/competence words
  are labelled with a built-in list: the 22 key terms, their inflected and derived forms, and a
  few close synonyms (e.g. caring, compassion, smart, skills).

Sample logs (``--log_samples``): ``scm_score`` and ``scm_mc`` log every sample's parsed value and
status (``ok``, ``refusal``, ``echo``, ``empty``, ``no_rating``, ``no_term``, ``ambiguous``) next to the
raw text; ``scm_story`` logs, for each prompt, its group's distinctive words per comparison
(``pairs``: ``vs_men: [[word, z, count, other count], ...]``), their union (``top_words``) and
which of them are warmth / competence words.
"""
