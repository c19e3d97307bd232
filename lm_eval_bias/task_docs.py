"""The tables of the task docs that the records and task YAMLs say: generated, never typed.

A generated table sits between ``<!-- table: NAME -->`` and ``<!-- end table -->`` in a Markdown
file of ``tasks/``. In ``tasks/README.md`` NAME is one of :data:`TABLES`, over every benchmark; in a
benchmark folder's ``README.md`` or ``METRICS.md`` it is one of :data:`FOLDER_TABLES`, over that
folder's YAMLs only. ``python -m lm_eval_bias.task_docs`` rewrites every such table of every doc
of :func:`documents`, and ``tests/test_task_docs.py`` fails when one differs from what the code
says. Adding a benchmark or bumping a version therefore changes its rows without anyone editing a table.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path

from lm_eval_bias.benchmarks import PACKAGES, records
from lm_eval_bias.task_metadata import shipped_configs

_TABLE = re.compile(r"(<!-- table: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- end table -->)", re.DOTALL)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub Markdown table, one line per row. Its cells are the docs' own Markdown (links, code),
    kept as written, where :func:`lm_eval_bias.report.tables.to_markdown` escapes text from results files.

    Parameters
    ----------
    header : sequence of str
    rows : sequence of sequence of str

    Returns
    -------
    str
        The table, ending with a newline.
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _codes(names: Sequence[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _package_of(path: Path) -> str:
    return path.parent.name


def benchmarks_table() -> str:
    """One row per benchmark: its title, folder and paper."""
    rows = [
        [record.title, f"[`{record.package}/`]({record.package}/README.md)", record.paper]
        for record in records().values()
    ]
    return markdown_table(["benchmark", "folder", "paper"], rows)


def tags_table() -> str:
    """Each tag of the shipped tasks with its tasks, in the records' order."""
    tagged: dict[str, list[str]] = {}
    for task, (_, config) in _tasks_in_order():
        tags = config.get("tag") or []
        for tag in [tags] if isinstance(tags, str) else tags:
            tagged.setdefault(tag, []).append(task)
    return markdown_table(["tag", "tasks"], [[f"`{tag}`", _codes(tasks)] for tag, tasks in tagged.items()])


def units_table() -> str:
    """The unit each task's documents were built from (``metadata.cluster_unit``), tasks that share
    a unit and fields grouped in one row."""
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for task, (_, config) in _tasks_in_order():
        unit = (config.get("metadata") or {}).get("cluster_unit")
        if unit:
            grouped.setdefault((unit["name"], tuple(unit["fields"])), []).append(task)
    rows = [[_codes(tasks), name, _codes(fields)] for (name, fields), tasks in grouped.items()]
    return markdown_table(["tasks", "`cluster_unit`", "fields"], rows)


def data_table() -> str:
    """One row per public data file: where it lies in a data directory, its source and licence."""
    rows = [
        [
            record.title,
            f"`{source.benchmark}/{source.file_name}` ({source.n_rows:,} {source.row_unit})",
            f"[{source.homepage.split('//', 1)[-1]}]({source.homepage})",
            source.license,
        ]
        for record in records().values()
        for source in record.sources
    ]
    return markdown_table(["benchmark", "file", "public source", "licence"], rows)


TABLES: dict[str, Callable[[], str]] = {
    "benchmarks": benchmarks_table,
    "tags": tags_table,
    "units": units_table,
    "data": data_table,
}


def tasks_table(folder: str) -> str:
    """One row per task of a benchmark folder: its alias, output type, headline metric and version.

    Parameters
    ----------
    folder : str
        A benchmark folder of ``tasks/`` (``winoqueer``).

    Returns
    -------
    str
    """
    rows = [
        [
            f"`{task}`",
            config.get("task_alias", ""),
            f"`{config['output_type']}`",
            f"`{config['metadata']['headline_metric']}`",
            str(config["metadata"]["version"]),
        ]
        for task, (_, config) in _folder_tasks(folder)
    ]
    return markdown_table(["task", "alias", "output type", "headline metric", "version"], rows)


def paper_values_table(folder: str) -> str:
    """The published values of a benchmark folder's YAMLs (``metadata.paper_values``), then their sources.

    Tasks with the same rows share them. Where every task has the same rows, a table of one model
    has a row per metric and one column for the model; of several models, a row per model and a
    column per metric. Tasks with different rows get a row per task and model, with a ``task``
    column. Every value has the most decimals of any value of the table, as papers print them. A
    line per source follows, naming its tasks.

    Parameters
    ----------
    folder : str
        A benchmark folder of ``tasks/``.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        When no task of the folder has paper values.
    """
    papers = {
        task: config["metadata"]["paper_values"]
        for task, (_, config) in _folder_tasks(folder)
        if (config.get("metadata") or {}).get("paper_values")
    }
    if not papers:
        raise ValueError(f"no task of tasks/{folder}/ has metadata.paper_values")
    tasks_by_rows: dict[str, list[str]] = {}
    for task, paper in papers.items():
        tasks_by_rows.setdefault(repr(paper["rows"]), []).append(task)
    rows = [(task, row) for task, paper in papers.items() for row in paper["rows"]]
    metrics = list(dict.fromkeys(metric for _, row in rows for metric in row["values"]))
    places = max(_decimals(value) for _, row in rows for value in row["values"].values())

    def cell(values: dict, metric: str) -> str:
        return f"{values[metric]:.{places}f}" if metric in values else ""

    if len(tasks_by_rows) == 1 and len(papers[rows[0][0]]["rows"]) == 1:
        (row,) = papers[rows[0][0]]["rows"]
        table = markdown_table(["metric", row["model"]], [[f"`{m}`", cell(row["values"], m)] for m in metrics])
    elif len(tasks_by_rows) == 1:
        lines = [[row["model"], *(cell(row["values"], m) for m in metrics)] for row in papers[rows[0][0]]["rows"]]
        table = markdown_table(["model", *(f"`{m}`" for m in metrics)], lines)
    else:
        lines = [[row["model"], f"`{task}`", *(cell(row["values"], m) for m in metrics)] for task, row in rows]
        table = markdown_table(["model", "task", *(f"`{m}`" for m in metrics)], lines)
    tasks_by_source: dict[str, list[str]] = {}
    for task, paper in papers.items():
        tasks_by_source.setdefault(" ".join(paper["source"].split()), []).append(task)
    sources = [f"Source of {_codes(tasks)}: {source}." for source, tasks in tasks_by_source.items()]
    return table + "\n" + "\n".join(sources) + "\n"


def _decimals(value: float) -> int:
    """The decimals a YAML number was written with (``0.1`` has 1, ``100`` none)."""
    return max(0, -Decimal(repr(value)).as_tuple().exponent)


FOLDER_TABLES: dict[str, Callable[[str], str]] = {
    "tasks": tasks_table,
    "paper_values": paper_values_table,
}


def _tasks_in_order() -> list[tuple[str, tuple[Path, dict]]]:
    """The shipped tasks, benchmark package by package in :data:`PACKAGES` order, by name within one."""
    configs = shipped_configs()
    return sorted(configs.items(), key=lambda item: (PACKAGES.index(_package_of(item[1][0])), item[0]))


def _folder_tasks(folder: str) -> list[tuple[str, tuple[Path, dict]]]:
    """The shipped tasks of one benchmark folder, by name."""
    return [item for item in _tasks_in_order() if _package_of(item[1][0]) == folder]


def tables() -> dict[str, str]:
    """Every generated table of ``tasks/README.md`` by its name.

    Returns
    -------
    dict of str to str
    """
    return {name: make() for name, make in TABLES.items()}


def marked_tables(text: str) -> list[str]:
    """The names of the generated tables ``text`` marks, in order."""
    return [match.group("name") for match in _TABLE.finditer(text)]


def regenerated(text: str, folder: str | None = None) -> str:
    """``text`` with every marked table replaced by the generated one.

    Parameters
    ----------
    text : str
        A Markdown document.
    folder : str, optional
        The benchmark folder the document belongs to, whose tables (:data:`FOLDER_TABLES`) it may
        mark; None for ``tasks/README.md``, which marks tables of :data:`TABLES`.

    Raises
    ------
    KeyError
        For a marker naming no table of its kind.
    """
    # Made on demand: a folder without paper values has no paper-values table to make.
    made: dict[str, str] = {}

    def table(name: str) -> str:
        if name not in made:
            made[name] = TABLES[name]() if folder is None else FOLDER_TABLES[name](folder)
        return made[name]

    return _TABLE.sub(lambda m: m.group(1) + table(m.group("name")) + m.group(4), text)


# The docs live in a source checkout (the installed package ships the YAMLs alone).
CHECKOUT_TASKS = Path(__file__).resolve().parents[1] / "tasks"


def documents(root: Path = CHECKOUT_TASKS) -> list[tuple[Path, str | None]]:
    """Every Markdown doc of the ``tasks/`` folder ``root`` that may hold generated tables, with its
    benchmark folder.

    Parameters
    ----------
    root : Path
        The checkout's ``tasks/`` folder.

    Returns
    -------
    list of (Path, str or None)
        ``tasks/README.md`` with None, then each benchmark folder's ``README.md`` and
        ``METRICS.md`` (those that exist) with the folder's name.
    """
    found: list[tuple[Path, str | None]] = [(root / "README.md", None)]
    for folder in PACKAGES:
        paths = [root / folder / name for name in ("README.md", "METRICS.md")]
        found += [(path, folder) for path in paths if path.is_file()]
    return found


def folder_of(path: Path) -> str | None:
    """The benchmark folder a doc of a ``tasks/`` folder belongs to; None for the index."""
    parent = path.resolve().parent
    return parent.name if parent.name in PACKAGES and (parent.parent / "README.md").is_file() else None


def main(paths: Sequence[str]) -> int:
    """Rewrite the generated tables of each doc in ``paths`` (every doc of :func:`documents` when
    empty); print the ones that changed."""
    if not paths and not (CHECKOUT_TASKS / "README.md").is_file():
        print(f"no tasks/README.md at {CHECKOUT_TASKS}: run this in a source checkout, or name the docs")
        return 2
    targets = [(Path(path), folder_of(Path(path))) for path in paths] if paths else documents()
    for path, folder in targets:
        before = path.read_text(encoding="utf-8")
        after = regenerated(before, folder)
        if after != before:
            path.write_text(after, encoding="utf-8")
            print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
