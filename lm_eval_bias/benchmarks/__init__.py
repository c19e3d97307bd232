"""The benchmarks: one package each, listed once in :data:`PACKAGES`.

A benchmark package holds everything about its benchmark: ``record`` (its names, data sources,
display constants and figures, as :class:`lm_eval_bias.benchmark_records.BenchmarkRecord`),
``loader``, ``scoring`` (pure functions) and ``task`` (the lm-eval task class and the hooks its
YAMLs in ``tasks/<package>/`` name). Every registry of the package reads the records through
:func:`records`; nothing outside a benchmark's package names it.
"""

from __future__ import annotations

import functools
import importlib

from lm_eval_bias.benchmark_records import BenchmarkRecord, DataSource
from lm_eval_bias.figure_specs import FigureKind

# The benchmark packages, in the report's order: adding a benchmark adds its package here.
PACKAGES = ("winoqueer", "tango", "gendercare", "scm", "community")


@functools.cache
def records() -> dict[str, BenchmarkRecord]:
    """Every benchmark's record by its name (a task's ``metadata.benchmark``), in the report's order.

    Returns
    -------
    dict of str to BenchmarkRecord
    """
    found: dict[str, BenchmarkRecord] = {}
    for package in PACKAGES:
        for record in importlib.import_module(f"{__name__}.{package}.record").RECORDS:
            if record.name in found:
                raise ValueError(
                    f"benchmark {record.name!r} is declared twice (packages {found[record.name].package}, {package})"
                )
            found[record.name] = record
    return found


@functools.cache
def sources() -> dict[str, DataSource]:
    """Every public data source of every benchmark, by its name (``lm-eval-bias download NAME``).

    Returns
    -------
    dict of str to DataSource
    """
    return {source.name: source for record in records().values() for source in record.sources}


def figure_kind(kind: str) -> FigureKind:
    """The figures the report draws for a figure kind a task's metadata names.

    Parameters
    ----------
    kind : str
        A task's ``metadata.figure``: one of its benchmark record's figure kinds.

    Returns
    -------
    FigureKind
        Its figures, in drawing order.

    Raises
    ------
    KeyError
        When no benchmark has that figure kind.
    """
    kinds = {name: figures for record in records().values() for name, figures in record.figures.items()}
    if kind not in kinds:
        raise KeyError(f"no benchmark has the figure kind {kind!r}; known: {', '.join(kinds)}")
    return kinds[kind]


def import_all() -> None:
    """Import every benchmark's task module, so that each has declared its options."""
    for package in PACKAGES:
        importlib.import_module(f"{__name__}.{package}.task")
