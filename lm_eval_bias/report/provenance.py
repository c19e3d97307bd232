"""The data behind a run: its provenance checked, and whether the run is partial and why.

Our tasks record in their config (``metadata.lm_eval_bias_data``) every data file they read, with
its sha256, its rows and whether it is the benchmark's official file, and the options that narrowed
the documents (``selection``) or changed how they are scored (``settings``).
:func:`partial_reasons` is the one rule that turns this record, ``--limit`` and lm-eval's document
counts into the reasons a run is partial.
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_bias.benchmark_records import DataSource
from lm_eval_bias.benchmarks import sources
from lm_eval_bias.report.values import ResultsError, is_number, shown


def partial_reasons(
    unit: str, limit: float | None, evaluated: int | None, available: int | None, provenance: dict | None
) -> tuple[str, ...]:
    """Why a run of a task is partial: the one rule for it.

    A run is partial when ``--limit`` was set, when fewer documents were
    evaluated than the task has (n-samples effective < original), when a data
    file it read is not the official one (or is recorded as official with another row count
    than the official file's), when an option narrowed the documents
    (``provenance["selection"]``), or when an option was not at its default
    (``provenance["settings"]``: another sample, another classifier...).

    Parameters
    ----------
    unit : str
        What one document of the task is ("pairs", "prompts"), for the reasons' text.
    limit : float or None
        lm-eval's ``config.limit``.
    evaluated, available : int or None
        The documents evaluated and the documents the task has (lm-eval's ``n-samples``).
    provenance : dict or None
        The task's ``metadata.lm_eval_bias_data``, as :func:`checked_provenance` returns it.

    Returns
    -------
    tuple of str
        The reasons, e.g. ``("--limit 20 (20 of 45,540 pairs)", "subgroups=Gay")``; empty when the
        run is complete.
    """
    counted = f"{evaluated:,} of {available:,} {unit}" if evaluated is not None and available is not None else None
    reasons = []
    if limit is not None:
        reasons.append(f"--limit {limit:g}" + (f" ({counted})" if counted else ""))
    elif counted and evaluated < available:
        reasons.append(f"{counted} evaluated")
    provenance = provenance or {}
    unofficial = [f for f in provenance.get("files", []) if f.get("official") is False]
    for record in unofficial:
        where = record.get("path") or record.get("name") or "?"
        rows, official_rows = record.get("rows"), record.get("official_rows")
        sizes = (
            f" ({rows:,} rows; the official file has {official_rows:,})"
            if rows is not None and official_rows is not None and rows != official_rows
            else ""
        )
        reasons.append(f"non-official data file {where}{sizes}")
    if provenance.get("official") is False and not unofficial:
        reasons.append("non-official data")
    if provenance.get("official") is True and not provenance.get("files"):
        # Our tasks record every file they read; an official claim without one cannot be checked.
        reasons.append("data recorded as official without its files, so the claim cannot be checked")
    claimed = [record for record in provenance.get("files", []) if record.get("official") is True]
    reasons += [reason for record in claimed if (reason := _claim_reason(record))]
    if limit is None and not provenance.get("selection"):
        reasons += [reason for record in claimed if (reason := _documents_reason(record, available, unit))]
    selection = provenance.get("selection") or {}
    if selection:
        reasons.append(", ".join(f"{option}={_option_text(value)}" for option, value in selection.items()))
    settings = provenance.get("settings") or {}
    if settings:
        reasons.append(
            "non-default " + ", ".join(f"{option}={_option_text(value)}" for option, value in settings.items())
        )
    return tuple(reasons)


def _known_source(record: dict) -> DataSource | None:
    """The data source of this package that a provenance record names, if any."""
    return sources().get(record.get("name")) if isinstance(record.get("name"), str) else None


def _official_facts(record: dict) -> tuple[str | None, int | None]:
    """(sha256, rows) of the official file a provenance record names: the benchmark's own as this
    package knows them (:func:`lm_eval_bias.benchmarks.sources`), which no edit of a results file can
    change; the record's own ``official_sha256``/``official_rows`` for a source it does not know."""
    source = _known_source(record)
    sha256 = source.sha256 if source is not None and source.sha256 else record.get("official_sha256")
    rows = source.n_rows if source is not None and source.n_rows is not None else record.get("official_rows")
    return sha256, rows


def _claim_reason(record: dict) -> str | None:
    """Why a file recorded as official is not the whole official file, or None when what the record
    says bears the claim out: its sha256 must be the official file's and its rows the official count
    (a sha256 edited by hand, or a file read in part, would pass a subset off as the benchmark)."""
    where = record.get("path") or record.get("name") or "?"
    official_sha256, official_rows = _official_facts(record)
    if official_sha256 is not None and record.get("sha256") != official_sha256:
        found = "records no sha256" if record.get("sha256") is None else "has another sha256"
        return f"data file {where} is recorded as official but {found} than the official file's"
    rows = record.get("rows")
    if rows is not None and official_rows is not None and rows != official_rows:
        return f"data file {where} has {rows:,} rows; the official file has {official_rows:,}"
    return None


def _documents_reason(record: dict, available: int | None, unit: str) -> str | None:
    """Why a run of an official file whose rows are its documents is partial although no option
    narrowed them: the task had fewer documents than the file has rows."""
    _, official_rows = _official_facts(record)
    source = _known_source(record)
    if source is None or not source.documents_are_rows or available is None or official_rows is None:
        return None
    if available == official_rows:
        return None
    where = record.get("path") or record.get("name") or "?"
    return (
        f"the task had {available:,} {unit}; the official file {where} has {official_rows:,}, "
        "and no option narrowed them"
    )


def _option_text(value) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def checked_provenance(path: Path, task: str, provenance) -> dict | None:
    """A task's data provenance, checked to be as lm-eval-bias writes it.

    Parameters
    ----------
    path : Path
        The results file, for messages.
    task : str
        The task, for messages.
    provenance : object
        ``configs[task].metadata.lm_eval_bias_data`` as parsed from JSON.

    Returns
    -------
    dict or None
        The record with ``files``, ``selection`` and ``settings`` always present; None without one.

    Raises
    ------
    ResultsError
        A record, file entry, count, ``selection`` or ``settings`` of the wrong type.
    """
    if provenance is None:
        return None
    where = f"{path}: configs.{task}.metadata.lm_eval_bias_data"

    def wrong(part: str, value, expected: str):
        return ResultsError(
            f"{where}{part} is {shown(value)}; expected {expected}; correct it or re-run the evaluation"
        )

    if not isinstance(provenance, dict):
        raise wrong("", provenance, 'an object {"official": ..., "files": [...], "selection": {...}}')
    if provenance.get("official") not in (True, False, None):
        raise wrong(".official", provenance.get("official"), "true, false or null")
    files = provenance.get("files") or []
    if not isinstance(files, list):
        raise wrong(".files", files, "a list of files")
    for index, record in enumerate(files):
        if not isinstance(record, dict) or record.get("official") not in (True, False, None):
            raise wrong(f".files[{index}]", record, 'an object with "path" and "official": true, false or null')
        for count in ("rows", "official_rows"):
            value = record.get(count)
            if value is not None and not (is_number(value) and value >= 0 and value == int(value)):
                raise wrong(f".files[{index}].{count}", value, "a whole number or null")
    selection = provenance.get("selection") or {}
    if not isinstance(selection, dict):
        raise wrong(".selection", selection, "an object {option: value}")
    settings = provenance.get("settings") or {}
    if not isinstance(settings, dict):
        raise wrong(".settings", settings, "an object {option: value}")
    return {**provenance, "files": files, "selection": selection, "settings": settings}
