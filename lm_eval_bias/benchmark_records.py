"""What a benchmark record is: the facts every registry of the package reads about a benchmark.

Each benchmark package declares its records in its ``record`` module
(``lm_eval_bias/benchmarks/<package>/record.py``); :func:`lm_eval_bias.benchmarks.records`
collects them. Task metadata checks a task's benchmark and figure against them, the report orders
and titles its sections by them, and ``lm-eval-bias download`` lists their data sources. This
module is pure data and imports nothing of the package, so that every layer can read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from lm_eval_bias.figure_specs import FigureKind


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
    only), so that messages suggest only remedies the task accepts. ``documents_are_rows`` says
    that each of the file's rows is one document of the task, so a complete run's document count
    must equal ``n_rows``; ``row_unit`` names what one row is ("pairs", "prompts").
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
    documents_are_rows: bool = False
    row_unit: str = "rows"


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
    figures : mapping of str to FigureKind
        The figure kinds the benchmark's tasks may name in ``metadata.figure``, each with the
        figures the report draws for it (:mod:`lm_eval_bias.figure_specs`).
    package : str
        The package under :mod:`lm_eval_bias.benchmarks` that holds the benchmark.
    sources : tuple of DataSource
        The public data files the benchmark reads (none for benchmarks whose prompts ship
        with the package).
    models : tuple of (str, str)
        Model backends the benchmark adds to lm-eval: the ``--model`` name and the class as
        ``"module:Class"``, imported only when the backend is used.
    option_prefixes : tuple of str
        The prefixes of the benchmark's own ``--metadata`` options (``"scm_"``), which it checks itself.
    commands : tuple of (str, str, str)
        Subcommands the benchmark adds to ``lm-eval-bias``: the command's name, its one-line help
        (its line in ``lm-eval-bias --help``) and its function as ``"module:function"``, which
        takes the command's arguments (a list of str) and returns the exit code; it is imported
        only when the command runs.
    """

    name: str
    title: str
    about: str
    figures: Mapping[str, FigureKind]
    package: str
    sources: tuple[DataSource, ...] = ()
    models: tuple[tuple[str, str], ...] = ()
    option_prefixes: tuple[str, ...] = ()
    commands: tuple[tuple[str, str, str], ...] = ()

    @property
    def paper(self) -> str:
        """The source paper, as ``about`` cites it in its first sentence."""
        return self.about.split(". ", 1)[0]


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
