"""Prompt realisation (pure): the thesis's prompts for each group, and the documents of each task."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence

from lm_eval_bias.benchmarks.scm.constants import (
    ADJECTIVE_STORY_PROMPTS,
    AXIS_OF_TERM,
    COMPETENCE_TERMS,
    MC_PROMPT,
    PROB_TEMPLATES,
    SCORE_PROMPT,
    SINGULAR_TEMPLATES,
    STORY_PROMPTS,
    TERMS,
    WARMTH_TERMS,
)
from lm_eval_bias.benchmarks.scm.options import Options


def capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def with_article(text: str) -> str:
    """Turn a template's "a X" into "an X" before a vowel (only user forms like "asexual" need it)."""
    return re.sub(r"\b([aA]) ([aeiouAEIOU])", r"\1n \2", text)


def score_prompt(term: str, forms: Mapping[str, str]) -> str:
    """Prompt 1 for one key term (lower case in the sentence) and one group."""
    return SCORE_PROMPT.replace("[Warmth-Competence term]", term.lower()).replace("[gender/sexuality]", forms["label"])


def ordered_terms(order: str, rng: random.Random | None = None) -> list[str]:
    """The 22 terms in a list order: Table 1's, alternating axes, or shuffled with ``rng``."""
    if order == "table":
        return list(TERMS)
    if order == "interleaved":
        return [t for pair in zip(WARMTH_TERMS, COMPETENCE_TERMS) for t in pair]
    if order == "shuffled":
        terms = list(TERMS)
        (rng or random.Random(0)).shuffle(terms)
        return terms
    raise ValueError(f"unknown term order {order!r}")


def mc_prompt(forms: Mapping[str, str], terms: Sequence[str], separator: str) -> str:
    """Prompt 3 with the term list appended on its own line."""
    return MC_PROMPT.replace("[group]", forms["label"]) + "\n" + separator.join(terms)


def prob_context(template_index: int, forms: Mapping[str, str]) -> tuple[str, str]:
    """(text before the key-term slot, text after it) of an Appendix H template for a group."""
    template = PROB_TEMPLATES[template_index]
    noun = forms["singular"] if template_index in SINGULAR_TEMPLATES else forms["plural"]
    sentence = with_article(template.replace("[Group]", capitalise(noun)).replace("[group]", noun))
    before, after = sentence.split(" [key term]")
    return before, after


def story_prompt(prompt_index: int, forms: Mapping[str, str]) -> str:
    """A Table 2 prompt for a group: adjective forms in prompts 1-2, nouns and pronouns in 3-5.

    "[pronoun] is" takes "are" after "they" (the only edit to the thesis's words).
    """
    text = STORY_PROMPTS[prompt_index]
    word = forms["adjective"] if prompt_index in ADJECTIVE_STORY_PROMPTS else forms["singular"]
    subject = forms["subject"]
    verb = "are" if subject.lower() in {"they", "you", "we"} else "is"
    text = text.replace("saying that [pronoun] is", f"saying that {subject} {verb}")
    text = text.replace("describe [pronoun]", f"describe {forms['object']}")
    return with_article(text.replace("[gender/sexuality]", word))


def score_docs(options: Options) -> list[dict]:
    """Prompt 1 for every group x term: term-major, warmth and competence alternating, so that
    ``--limit 14`` already covers every group on both axes."""
    docs = []
    for index, (warm, competent) in enumerate(zip(WARMTH_TERMS, COMPETENCE_TERMS)):
        for term in (warm, competent):
            for group in options.groups:
                docs.append(
                    {
                        "group": group,
                        "axis": AXIS_OF_TERM[term],
                        "term": term,
                        "term_index": index,
                        "prompt": score_prompt(term, options.forms[group]),
                    }
                )
    return docs


def mc_docs(options: Options, samples: int) -> list[dict]:
    """Prompt 3 per group, ``samples`` documents each, sample-major (``--limit 7`` = one each).

    Each document is one sampled answer, so a group's warmth share is a proportion of
    independent picks (Wilson interval); with ``shuffled`` order every document has its own
    list order (seeded by ``scm_seed``, the group and the sample).
    """
    docs = []
    for sample in range(samples):
        for group in options.groups:
            rng = random.Random(f"{options.seed}-{group}-{sample}")
            terms = ordered_terms(options.term_order, rng)
            docs.append(
                {
                    "group": group,
                    "sample": sample,
                    "terms": terms,
                    "axes": [AXIS_OF_TERM[t] for t in terms],
                    "n_prompts": samples,
                    "prompt": mc_prompt(options.forms[group], terms, options.term_separator),
                }
            )
    return docs


def prob_ratio_docs(options: Options) -> list[dict]:
    """Every Appendix H template for every group, template-major; the 22 terms are the choices."""
    docs = []
    for index in range(len(PROB_TEMPLATES)):
        for group in options.groups:
            context, suffix = prob_context(index, options.forms[group])
            docs.append(
                {
                    "group": group,
                    "template_index": index,
                    "context": context,
                    "suffix": suffix,
                    "terms": [t.lower() for t in TERMS],
                    "axes": [AXIS_OF_TERM[t] for t in TERMS],
                }
            )
    return docs


def story_docs(options: Options) -> list[dict]:
    """Every Table 2 prompt for every group, prompt-major. Each document carries the analysis
    options, so they are recorded in the sample logs."""
    analysis = json.dumps(
        {
            "top_k": options.story_top_k,
            "min_count": options.story_min_count,
            "min_z": options.story_min_z,
            "prior": options.story_prior,
            "lexicon": options.story_lexicon,
        }
    )
    return [
        {
            "group": group,
            "prompt_index": index,
            "prompt": story_prompt(index, options.forms[group]),
            "analysis": analysis,
        }
        for index in range(len(STORY_PROMPTS))
        for group in options.groups
    ]
