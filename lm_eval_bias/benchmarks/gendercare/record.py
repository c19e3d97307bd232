"""GenderCARE GenderPair's record: what the package's registries and the report know about it."""

from __future__ import annotations

from lm_eval_bias.benchmark_records import BenchmarkRecord, DataSource
from lm_eval_bias.figure_specs import (
    FigureKind,
    GroupBars,
    Groups,
    Line,
)

# Commit 942d135 is the newest commit seen (2024-08-29); the pair sets were added in
# ecfc182 and never changed since; their blobs were checked to have our sha256.
_GENDERCARE_COMMIT = "942d13525e8a029df11bae5271aa3cb5db48b1a0"


def _genderpair_pair_set(group: int, sha256: str, n_targets: int) -> DataSource:
    """GenderPair's released pair set of one gender group (1, 2 or 3)."""
    return DataSource(
        name=f"gendercare_group{group}",
        benchmark="gendercare",
        file_name=f"group{group}_pairset.json",
        urls=(
            f"https://raw.githubusercontent.com/kstanghere/GenderCARE-ccs24/{_GENDERCARE_COMMIT}/"
            "Datasets/Assess_Gender_Bias/Our_Benchmark_GenderPair/pair_sets/"
            f"group{group}/group{group}_pairset.json",
        ),
        license="MIT",
        homepage="https://github.com/kstanghere/GenderCARE-ccs24",
        sha256=sha256,
        n_rows=n_targets,
        takes_data_file=False,
        row_unit="targets",
    )


GENDERCARE_GROUP1 = _genderpair_pair_set(1, "687aaeced86d35abd3246aefa3c32ec6225d4c5e01fd46a372d36a2886fea181", 64)
GENDERCARE_GROUP2 = _genderpair_pair_set(2, "8b6d952ea2390009722b4fa4d758896b687f2caf320b46c26256b9af964babd3", 64)
GENDERCARE_GROUP3 = _genderpair_pair_set(3, "7af0ffbbef668f4b0cd32bb20da7681590609cb0bb9e9ab58d15dc22d5b54b48", 79)

SOURCES = {1: GENDERCARE_GROUP1, 2: GENDERCARE_GROUP2, 3: GENDERCARE_GROUP3}

# Metric suffix of each gender group, with the label the report gives it.
GROUP_LABELS = {
    "group1": "group 1 (male)",
    "group2": "group 2 (female)",
    "group3": "group 3 (non-binary, neutral)",
}

# The report's figures of each figure kind the tasks' metadata may name.
GENDERPAIR_BIAS_PAIR_RATIO = GroupBars(
    metric="bias_pair_ratio",
    title="GenderPair bias pair ratio by gender group",
    caption=(
        "Share of decided responses that use the biased descriptor of the offered (biased, anti-biased) pair, "
        "per gender group of the target. Whiskers: 95% intervals. Dashed line at 0.5: the model prefers "
        "neither descriptor. Lower is better (0: the biased descriptor is never chosen); equal bars across "
        "groups mean no difference between genders."
    ),
    value_label="bias pair ratio",
    value_range=(0, 1),
    groups=Groups(order=tuple(GROUP_LABELS), labels=GROUP_LABELS, starting=("group",)),
    references=(Line(0.5, "0.5: no preference"),),
    overall_label="all groups",
    always=True,
)
GENDERCARE_FIGURES = {"bias_pair_ratio_by_group": FigureKind((GENDERPAIR_BIAS_PAIR_RATIO,))}


RECORDS = (
    BenchmarkRecord(
        name="gendercare",
        title="GenderCARE GenderPair",
        about=(
            "Tang et al., ACM CCS 2024. Whether the model describes a gender target with the biased or the "
            "anti-biased descriptor of a pair, per gender group."
        ),
        figures=GENDERCARE_FIGURES,
        package="gendercare",
        sources=(GENDERCARE_GROUP1, GENDERCARE_GROUP2, GENDERCARE_GROUP3),
    ),
)
