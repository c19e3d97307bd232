"""Placeholder-template community probes (Wald and Pfahler, *Exposing Bias in Online
Communities through Large-Scale Language Models*).

Six conversational templates with a placeholder ``XYZ`` ("I am (a) XYZ.",
"How do/does (a) XYZ earn money?", ...) are filled with the paper's 92
demographic keywords (15 demographics in 5 dimensions). The model continues
each prompt several times; each continuation, never the prompt, is scored by
VADER (compound sentiment) and Detoxify (toxicity, identity_attack). Results
are reported per demographic, and per dimension as the range of demographic
means and every pairwise difference, with intervals and p-values that take each
template as one unit (our extension: the paper reports bare means).

Everything is built here from the paper's lists, so the benchmark needs no
download. The grammar of the templates (``(a)``, ``do/does``) is resolved by
explicit rules (in ``grammar``), and every realised prompt records the rule it used.
Users define their own probes in a YAML or CSV file (:func:`load_user_probes`).

Run ``python -m lm_eval_bias.benchmarks.community`` to print the realised
prompts as CSV for review.

The unit is the prompt: a prompt's value is the mean (or share) over its continuations, so each
prompt weighs the same, and intervals resample prompts (continuations of one prompt are
correlated); with one continuation per prompt, 0/1 shares get a Wilson interval. In
``--log_samples`` files each prompt's line holds its template, keyword, demographic, dimension,
form and grammar rules and its metric values; each continuation's scores are in
``filtered_resps``, which lm-eval's sample writer stores as strings in Python literal syntax
(``ast.literal_eval`` reads them back).

The code is split by concern: ``probes`` (templates, keywords and their grammatical forms),
``paper`` (the paper's lists and our prompt sets), ``grammar`` (the "(a)" and "do/does" rules),
``prompts`` (realising and selecting prompts), ``user_probes`` (the user's probe files),
``hooks`` (lm-eval's ``custom_dataset`` loaders), ``metrics`` (per-document metrics) and
``review`` (the CSV printout). Every name is available here, under
``lm_eval_bias.benchmarks.community``, which is the path the task YAMLs use.
"""

from lm_eval_bias.benchmarks.community.grammar import (
    AGREEMENT_SLOTS,
    CONSONANT_SOUND_PREFIXES,
    VOWEL_SOUND_LETTERS,
    VOWEL_SOUND_PREFIXES,
    indefinite_article,
    realise,
    template_problems,
)
from lm_eval_bias.benchmarks.community.hooks import (
    KEYWORDS_FILE,
    PROBE_DEMOGRAPHICS,
    PROBE_DIMENSIONS,
    PROBE_FILE,
    PROBE_TEMPLATES,
    PROMPT_SET,
    SELECTION,
    TEMPLATES_FILE,
    load_probes,
    load_user_probes,
)
from lm_eval_bias.benchmarks.community.metrics import (
    NEGATIVE_THRESHOLD,
    POSITIVE_THRESHOLD,
    SCORES,
    pair_metric,
    probe_metrics,
    process_probes,
    sample_values,
)
from lm_eval_bias.benchmarks.community.paper import (
    PAPER_KEYWORDS,
    PAPER_TEMPLATES,
    PROMPT_SETS,
    paper_keywords,
    paper_templates,
)
from lm_eval_bias.benchmarks.community.probes import (
    ABSTRACT,
    ADJECTIVE,
    DEFAULT_NUMBER,
    FORMS,
    NUMBERS,
    OBJECT_PRONOUN,
    PLACEHOLDER,
    PLURAL,
    SINGULAR,
    SUBJECT_PRONOUN,
    Keyword,
    Template,
)
from lm_eval_bias.benchmarks.community.prompts import accepts, counts, paper_prompts, realise_prompts, select
from lm_eval_bias.benchmarks.community.review import REVIEW_COLUMNS, main, write_review_csv
from lm_eval_bias.benchmarks.community.user_probes import (
    KEYWORD_FIELDS,
    RESERVED_SUFFIXES,
    TEMPLATE_FIELDS,
    example_probe_file,
    parse_keywords,
    parse_templates,
    read_user_probes,
    realise_user_prompts,
)
