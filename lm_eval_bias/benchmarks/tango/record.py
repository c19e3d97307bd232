"""TANGO's records (misgendering and gender disclosure): what the package's registries and the report
know about them."""

from __future__ import annotations

from lm_eval_bias.benchmark_records import BenchmarkRecord, DataSource
from lm_eval_bias.figure_specs import (
    RUN,
    SENTIMENT_CAPTION,
    TOXICITY_CAPTION,
    FigureKind,
    GroupBars,
    Groups,
    Line,
    RunSeries,
    scores_by_group,
)
from lm_eval_bias.pronouns import FAMILIES

TANGO_MISGENDERING = DataSource(
    name="tango_misgendering",
    benchmark="tango",
    file_name="misgendering_prompts.csv",
    # Commit bbaf0bb is the newest commit seen (2023-07-17); both paths hold blob
    # 01d2d8af (315,244 bytes), checked to have our sha256. The root copy is unchanged
    # since 24c6e7e, the prompts/ copy since 23c4bab.
    urls=(
        "https://raw.githubusercontent.com/amazon-science/tango/"
        "bbaf0bb22a3fc391e2e7247a2d25c6850625013b/misgendering_prompts.csv",
        "https://raw.githubusercontent.com/amazon-science/tango/"
        "bbaf0bb22a3fc391e2e7247a2d25c6850625013b/prompts/misgendering_prompts.csv",
    ),
    license="CC BY-SA 4.0",
    homepage="https://github.com/amazon-science/tango",
    sha256="dfa0d72b927939e63885a0219d8b3de5af837a50a50b5161c24aef0cfeee6ed7",
    n_rows=2880,
    documents_are_rows=True,
    row_unit="prompts",
)

TANGO_DISCLOSURE = DataSource(
    name="tango_disclosure",
    benchmark="tango",
    # One file on the Hugging Face hub; GitHub splits the same rows into 8 CSV
    # parts, which also load once merged into one CSV (pass it as data_file).
    file_name="disclosure.jsonl",
    # No sha256 is published: downloads are checked by their line count. Revision
    # 2d2eee4 is the last commit of the dataset card on main in a stored copy of the
    # hub page; that it holds this file could not be checked (no hub access here),
    # so `main` (unpinned) follows as a fallback. The line-count check guards both.
    urls=(
        "https://huggingface.co/datasets/AlexaAI/TANGO/resolve/"
        "2d2eee4d1d35e210c73ce1afdb14685ff3eb9fe1/disclosure.jsonl",
        "https://huggingface.co/datasets/AlexaAI/TANGO/resolve/main/disclosure.jsonl",
    ),
    license="CC BY-SA 4.0",
    homepage="https://huggingface.co/datasets/AlexaAI/TANGO",
    n_rows=1532160,
    row_unit="prompts",
)

# Antecedent types of the release, with the names metrics use for them.
ANTECEDENT_TYPES = {
    "ante_nongendered": "nongendered_name",
    "ante_gendered_female": "feminine_name",
    "ante_gendered_male": "masculine_name",
    "distal": "distal",
}


# The report's figures of each figure kind the tasks' metadata may name.
def _consistency(measured: str, left_out: str) -> GroupBars:
    """Pronoun consistency by family, one series per antecedent type; ``measured``: what is counted."""
    antecedent_colours = ("#56B4E9", "#E69F00", "#009E73", "#CC79A7")
    return GroupBars(
        metric="consistency",
        title=f"Pronoun consistency by family and antecedent type: {RUN}",
        caption=(
            f"{RUN}. Share of {measured} belongs to the prompt's pronoun family (x axis), by "
            "antecedent type (colour; grey: all antecedent types together)."
            + left_out
            + " Whiskers: 95% intervals. Dashed line at 1: the pronoun family is always kept, the ideal; "
            "0: always misgendered."
        ),
        value_label="pronoun consistency",
        value_range=(0, 1),
        groups=Groups(order=FAMILIES, only=FAMILIES),
        references=(Line(1, "1: always consistent (ideal)"),),
        per_run_series=(RunSeries("all antecedents", "", "#7f7f7f"),)
        + tuple(
            RunSeries(antecedent.replace("_", " "), f"_{antecedent}", colour)
            for antecedent, colour in zip(ANTECEDENT_TYPES.values(), antecedent_colours)
        ),
    )


NO_FAMILY = "No per-family consistency metrics in these results: no figure."
CONSISTENCY_OF_GENERATIONS = _consistency(
    "continuations whose first pronoun", " Continuations without a pronoun are left out."
)
# tango_misgender_prob asks the model's probabilities instead of generating.
CONSISTENCY_OF_NEXT_PRONOUN = _consistency("prompts whose most likely next-sentence pronoun", "")
TANGO_MISGENDER_FIGURES = {
    "consistency_of_generations": FigureKind((CONSISTENCY_OF_GENERATIONS,), NO_FAMILY),
    "consistency_of_next_pronoun": FigureKind((CONSISTENCY_OF_NEXT_PRONOUN,), NO_FAMILY),
}


def _disclosure(measure: str, most: str, caption: str) -> GroupBars:
    return scores_by_group(
        measure,
        f"{measure.capitalize()} of continuations by disclosed gender identity",
        f'Mean {measure} of the model\'s continuations of disclosure prompts ("<name> came out as <identity>") '
        f"per gender identity, most {most} first. {caption}",
        Groups(),
        sort_by_mean=True,
    )


TANGO_DISCLOSURE_FIGURES = {
    "scores_by_identity": FigureKind(
        (_disclosure("toxicity", "toxic", TOXICITY_CAPTION), _disclosure("sentiment", "positive", SENTIMENT_CAPTION)),
        none_drawn="No per-identity metrics in these results: no figure.",
    )
}


RECORDS = (
    BenchmarkRecord(
        name="tango_misgender",
        title="TANGO misgendering",
        about=(
            "Ovalle et al., FAccT 2023. Whether the model keeps a person's pronouns (he, she, they, xe, ey, fae) "
            "when continuing a sentence that introduces them."
        ),
        figures=TANGO_MISGENDER_FIGURES,
        package="tango",
        sources=(TANGO_MISGENDERING,),
        commands=(
            (
                "tango-agreement",
                "how often TANGO's generation and probability methods agree",
                "lm_eval_bias.benchmarks.tango.agreement:main",
            ),
        ),
    ),
    BenchmarkRecord(
        name="tango_disclosure",
        title="TANGO gender disclosure",
        about=(
            "Ovalle et al., FAccT 2023. Toxicity (Detoxify) and sentiment (VADER) of continuations of sentences "
            "in which someone discloses their gender identity."
        ),
        figures=TANGO_DISCLOSURE_FIGURES,
        package="tango",
        sources=(TANGO_DISCLOSURE,),
    ),
)
