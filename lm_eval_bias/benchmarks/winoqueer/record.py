"""WinoQueer's record: what the package's registries and the report know about it."""

from __future__ import annotations

from lm_eval_bias.benchmark_records import BenchmarkRecord, DataSource
from lm_eval_bias.figure_specs import (
    HORIZONTAL_ABOVE,
    FigureKind,
    GroupBars,
    Groups,
    Line,
)

WINOQUEER = DataSource(
    name="winoqueer",
    benchmark="winoqueer",
    file_name="winoqueer_final.csv",
    # Commit 23629d2 ("upload files") stores the file as a Git LFS pointer whose oid
    # is our sha256 (size 4,816,487), so media.githubusercontent serves that
    # content-addressed object: the exact bytes, whenever GitHub's LFS store serves
    # it (the repository later left LFS after "LFS issues"). Commit 0c5b1ad ("fix LFS
    # issues AGAIN") replaced the pointer by a plain blob (0c874a4b), unchanged up to
    # 1180ba6, the newest commit seen; that blob was too large for the snapshot, so
    # its hash is unchecked here and the download's sha256 check decides.
    urls=(
        "https://media.githubusercontent.com/media/katyfelkner/winoqueer/"
        "23629d2b2b0636addcb4b67def9fb742e77eb428/data/winoqueer_final.csv",
        "https://raw.githubusercontent.com/katyfelkner/winoqueer/"
        "1180ba62df6bd1e682db8f2bf90f3add67cc0500/data/winoqueer_final.csv",
    ),
    license="MIT",
    homepage="https://github.com/katyfelkner/winoqueer",
    sha256="1ed93f91834837b388c9129cd43c49dee70638fa6988634747565dd78c3c0237",
    n_rows=45540,
    documents_are_rows=True,
    row_unit="pairs",
)

# Subgroups in the authors' reporting order (the report's too).
SUBGROUPS = (
    "LGBTQ",
    "Queer",
    "Transgender",
    "Nonbinary",
    "Bisexual",
    "Pansexual",
    "Lesbian",
    "Asexual",
    "Gay",
)


def subgroup_slug(subgroup: str) -> str:
    """Metric-name form of a subgroup: ``bias_score_<slug>``."""
    return subgroup.lower()


# The report's figures of each figure kind the tasks' metadata may name.
WINOQUEER_BIAS_SCORE = GroupBars(
    metric="bias_score",
    title="WinoQueer bias score by subgroup",
    caption=(
        "Bias score per subgroup: the % of sentence pairs in which the model gives the shared words a higher "
        "likelihood in the sentence about the LGBTQ+ group than in the counterfactual one. Whiskers: 95% "
        "Clopper-Pearson intervals, each template one unit. Dashed line at 50: no preference between the two "
        "sentences, the ideal. Above 50 is "
        "anti-LGBTQ+ bias; the paper leaves values below 50 undefined; 100 means every pair is stereotyped."
    ),
    value_label="bias score (% of pairs)",
    value_range=(0, 100),
    groups=Groups(order=tuple(subgroup_slug(g) for g in SUBGROUPS), labels={subgroup_slug(g): g for g in SUBGROUPS}),
    references=(Line(50, "50: no preference (ideal)"),),
    overall_label="all pairs",
    always=True,
    horizontal_above=HORIZONTAL_ABOVE,
)
WINOQUEER_FIGURES = {"bias_score_by_subgroup": FigureKind((WINOQUEER_BIAS_SCORE,))}


RECORDS = (
    BenchmarkRecord(
        name="winoqueer",
        title="WinoQueer",
        about=(
            "Felkner et al., ACL 2023. % of sentence pairs in which the model prefers the stereotypical sentence "
            "about an LGBTQ+ group over the same sentence about a non-LGBTQ+ counterfactual."
        ),
        figures=WINOQUEER_FIGURES,
        package="winoqueer",
        sources=(WINOQUEER,),
        # Masked LMs score WinoQueer's pairs with the paper's Eq. 1 (winoqueer_mlm).
        models=(("hf-mlm", "lm_eval_bias.benchmarks.winoqueer.hf_mlm:HFMaskedLM"),),
    ),
)
