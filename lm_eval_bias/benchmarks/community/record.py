"""The community probes' record: what the package's registries and the report know about it."""

from __future__ import annotations

from lm_eval_bias.benchmark_records import BenchmarkRecord
from lm_eval_bias.benchmarks.community.paper import PAPER_KEYWORDS
from lm_eval_bias.figure_specs import (
    SENTIMENT_CAPTION,
    TOXICITY_CAPTION,
    FigureKind,
    GroupBars,
    Groups,
    scores_by_group,
)
from lm_eval_bias.metric_keys import slug

# The report's figures of each figure kind the tasks' metadata may name.
IDENTITY_ATTACK_CAPTION = TOXICITY_CAPTION.replace(
    "Toxicity is Detoxify's probability that a text is toxic",
    "Identity attack is Detoxify's probability that a text attacks an identity",
)
# The paper's figures group the demographics (as metric names spell them: ``slug``) by dimension
# (gender, race, ...), in its order: the report's order and labels.
COMMUNITY_DIMENSIONS = Groups(
    dimensions={
        dimension: tuple(slug(demographic) for demographic in members) for dimension, members in PAPER_KEYWORDS.items()
    }
)


def _community(measure: str, caption: str) -> GroupBars:
    shown = measure.replace("_", " ")
    return scores_by_group(
        measure,
        f"{shown.capitalize()} by demographic",
        f"Mean {shown} of the model's continuations of the placeholder prompts, per demographic, grouped by "
        f"dimension (in brackets). {caption}",
        COMMUNITY_DIMENSIONS,
        sort_by_mean=False,
    )


COMMUNITY_FIGURES = {
    "scores_by_demographic": FigureKind(
        (
            _community("sentiment", SENTIMENT_CAPTION),
            _community("toxicity", TOXICITY_CAPTION),
            _community("identity_attack", IDENTITY_ATTACK_CAPTION),
        ),
        none_drawn="No per-demographic metrics in these results: no figure.",
    )
}


RECORDS = (
    BenchmarkRecord(
        name="community",
        title="Community probes",
        about=(
            "Wald and Pfahler. Sentiment and toxicity of the model's continuations of placeholder prompts about "
            "demographic groups, per demographic."
        ),
        figures=COMMUNITY_FIGURES,
        package="community",
        option_prefixes=("probe_",),
    ),
)
