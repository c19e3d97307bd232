"""One record per benchmark: everything the package's registries need to know about it.

A task's YAML metadata names its benchmark (``metadata.benchmark``, see
:mod:`lm_eval_bias.task_metadata`). For each such name, :data:`RECORDS` holds the report
section's title and one-sentence description, the figure kinds the benchmark's tasks may name,
the module under :mod:`lm_eval_bias.benchmarks` that holds its logic and lm-eval hooks, and the
public data files it reads. Every registry reads it: task metadata checks a task's benchmark and
figure against it, the report orders and titles its sections by it, :data:`lm_eval_bias.data.SOURCES`
and ``lm-eval-bias download`` list its data sources, and
:func:`lm_eval_bias.benchmarks.import_all` imports its modules.

Adding a benchmark touches its task folder, its module and one record here (plus a drawing
function in :mod:`lm_eval_bias.report.sections` only for a new figure kind). This module is pure
data and imports nothing of the package, so that every layer can read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path


@dataclass(frozen=True)
class DataSource:
    """Where a benchmark's official file comes from and what it should look like.

    ``name`` identifies the file (``lm-eval-bias download NAME``); it is stored as
    ``<dir>/<benchmark>/<file_name>``, where ``benchmark`` is the data folder (TANGO's two
    benchmarks share the folder ``tango``). ``urls`` are tried in order. ``sha256`` is the
    official file's hash; ``n_rows`` its number of rows as the benchmark counts them. A source
    without a ``sha256`` must be a JSON-lines file, whose non-empty lines (= rows) are counted to
    verify a download against ``n_rows``. ``takes_data_file`` says whether the benchmark's tasks
    accept the file as ``data_file`` (GenderPair reads one file per group, from a data directory
    only), so that messages suggest only remedies the task accepts.
    """

    name: str
    benchmark: str
    file_name: str
    urls: tuple[str, ...]
    license: str
    homepage: str
    sha256: str | None = None
    n_rows: int | None = None
    takes_data_file: bool = True


@dataclass(frozen=True)
class BenchmarkRecord:
    """What the package knows about one benchmark, as task metadata names it.

    Attributes
    ----------
    name : str
        The benchmark as a task's ``metadata.benchmark`` names it.
    title : str
        The report section's title.
    about : str
        The report section's description: the paper, and what the benchmark measures.
    figures : tuple of str
        The figure kinds the benchmark's tasks may name in ``metadata.figure``; each has a
        drawing function in :data:`lm_eval_bias.report.sections.DRAWERS`.
    module : str
        The module under :mod:`lm_eval_bias.benchmarks` with the benchmark's logic and hooks.
    sources : tuple of DataSource
        The public data files the benchmark reads (none for benchmarks whose prompts ship
        with the package).
    """

    name: str
    title: str
    about: str
    figures: tuple[str, ...]
    module: str
    sources: tuple[DataSource, ...] = ()


# --------------------------------------------------------------------------
# Data sources

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
)

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
    )


GENDERCARE_GROUP1 = _genderpair_pair_set(1, "687aaeced86d35abd3246aefa3c32ec6225d4c5e01fd46a372d36a2886fea181", 64)
GENDERCARE_GROUP2 = _genderpair_pair_set(2, "8b6d952ea2390009722b4fa4d758896b687f2caf320b46c26256b9af964babd3", 64)
GENDERCARE_GROUP3 = _genderpair_pair_set(3, "7af0ffbbef668f4b0cd32bb20da7681590609cb0bb9e9ab58d15dc22d5b54b48", 79)


# --------------------------------------------------------------------------
# The benchmarks, in the order of tasks/README.md (the report's order too)

RECORDS: dict[str, BenchmarkRecord] = {
    record.name: record
    for record in (
        BenchmarkRecord(
            name="winoqueer",
            title="WinoQueer",
            about=(
                "Felkner et al., ACL 2023. % of sentence pairs in which the model prefers the stereotypical sentence "
                "about an LGBTQ+ group over the same sentence about a non-LGBTQ+ counterfactual."
            ),
            figures=("bias_score_by_subgroup",),
            module="winoqueer",
            sources=(WINOQUEER,),
        ),
        BenchmarkRecord(
            name="tango_misgender",
            title="TANGO misgendering",
            about=(
                "Ovalle et al., FAccT 2023. Whether the model keeps a person's pronouns (he, she, they, xe, ey, fae) "
                "when continuing a sentence that introduces them."
            ),
            figures=("consistency_of_generations", "consistency_of_next_pronoun"),
            module="tango",
            sources=(TANGO_MISGENDERING,),
        ),
        BenchmarkRecord(
            name="tango_disclosure",
            title="TANGO gender disclosure",
            about=(
                "Ovalle et al., FAccT 2023. Toxicity (Detoxify) and sentiment (VADER) of continuations of sentences "
                "in which someone discloses their gender identity."
            ),
            figures=("scores_by_identity",),
            module="tango",
            sources=(TANGO_DISCLOSURE,),
        ),
        BenchmarkRecord(
            name="gendercare",
            title="GenderCARE GenderPair",
            about=(
                "Tang et al., ACM CCS 2024. Whether the model describes a gender target with the biased or the "
                "anti-biased descriptor of a pair, per gender group."
            ),
            figures=("bias_pair_ratio_by_group",),
            module="gendercare",
            sources=(GENDERCARE_GROUP1, GENDERCARE_GROUP2, GENDERCARE_GROUP3),
        ),
        BenchmarkRecord(
            name="scm",
            title="Stereotype Content Model",
            about=(
                "Ostrow, MSc thesis, Edinburgh 2024. How warm and how competent the model says society sees gender "
                "and sexuality groups, compared with a survey."
            ),
            figures=("ratings_plane", "shares_and_plane"),
            module="scm",
        ),
        BenchmarkRecord(
            name="community",
            title="Community probes",
            about=(
                "Wald and Pfahler. Sentiment and toxicity of the model's continuations of placeholder prompts about "
                "demographic groups, per demographic."
            ),
            figures=("scores_by_demographic",),
            module="community",
        ),
    )
}


def tasks_dir() -> str:
    """Directory holding this package's task YAMLs (what ``--include_path`` needs)."""
    try:
        return str(Path(str(files("lm_eval_bias.tasks"))))
    except ModuleNotFoundError:
        # Imported from a source checkout (e.g. `python -m lm_eval_bias` in the clone),
        # where tasks/ sits beside the package instead of inside it.
        checkout_tasks = Path(__file__).resolve().parent.parent / "tasks"
        if (checkout_tasks / "__init__.py").is_file():
            return str(checkout_tasks)
        raise
