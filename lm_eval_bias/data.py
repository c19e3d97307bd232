"""One loader for every benchmark's public data file.

A benchmark's file is resolved in this order:

1. an explicit local file (task metadata ``data_file``);
2. a local data directory (metadata ``data_dir``, else the environment variable
   ``LM_EVAL_BIAS_DATA_DIR``) laid out as ``<dir>/<benchmark>/<official file name>``;
3. the local cache (``LM_EVAL_BIAS_CACHE_DIR``, else ``$XDG_CACHE_HOME/lm_eval_bias``,
   else ``~/.cache/lm_eval_bias``), same layout, used only if it is the official file;
4. the public source, downloaded once into the cache, unless offline
   (``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``, ``TRANSFORMERS_OFFLINE`` or
   ``LM_EVAL_BIAS_OFFLINE`` set).

A user's own file (1, 2) is used as it is, with a warning when it differs from
the official one (a deliberate subset is fine). The cache (3) and downloads (4)
hold only verified files: the official sha256, or for a source without a published
sha256, the official number of lines. Downloads go through pooch
(:mod:`lm_eval_bias.downloads`); the public URLs are pinned to fixed commits, so the
hashes stay true when the upstream repositories move on.

``lm-eval-bias download --to DIR`` fetches every benchmark's file into the
data-directory layout, for air-gapped clusters.

Benchmarks read their files with :func:`open_text` / :func:`read_text`, which
name the file, line and byte of any text that is not UTF-8.
"""

from __future__ import annotations

import codecs
import logging
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from lm_eval_bias.benchmark_records import DataSource
from lm_eval_bias.benchmarks import sources
from lm_eval_bias.downloads import NoGoodDownload, download, sha256_of
from lm_eval_bias.downloads import difference as official_difference

# Re-exported: benchmarks raise them as data.DataError etc.
from lm_eval_bias.errors import DataError, DataNotFoundError, MalformedDataError  # noqa: F401

logger = logging.getLogger("lm_eval_bias")

DATA_DIR_ENV = "LM_EVAL_BIAS_DATA_DIR"
CACHE_DIR_ENV = "LM_EVAL_BIAS_CACHE_DIR"
OFFLINE_ENVS = (
    "LM_EVAL_BIAS_OFFLINE",
    "HF_HUB_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "TRANSFORMERS_OFFLINE",
)


def get_source(name: str) -> DataSource:
    """The data source named ``name`` (as ``lm-eval-bias download NAME`` names it).

    Raises
    ------
    DataError
        For an unknown name, listing the known ones.
    """
    try:
        return sources()[name]
    except KeyError:
        raise DataError(f"unknown data source {name!r}; known: {', '.join(sorted(sources()))}") from None


def is_offline() -> bool:
    """Whether any of :data:`OFFLINE_ENVS` is set (to 1, true, yes or on): then nothing is downloaded."""
    return any(os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"} for name in OFFLINE_ENVS)


def cache_dir() -> Path:
    """The cache folder: ``LM_EVAL_BIAS_CACHE_DIR``, else ``$XDG_CACHE_HOME/lm_eval_bias``, else ``~/.cache/...``."""
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "lm_eval_bias"


# --------------------------------------------------------------------------
# Reading text files


def open_text(path: str | os.PathLike) -> Iterator[str]:
    """The file's lines decoded as UTF-8, each with its line ending, streamed.

    Lines end where ``open(path, encoding="utf-8-sig", newline="")`` ends them
    ("\\n", "\\r\\n" or a lone "\\r", kept as they are), and a leading BOM is
    dropped, so ``csv.reader(open_text(path))`` reads exactly what it reads from
    that handle, quoted fields spanning lines included. A byte that is not UTF-8
    raises :class:`MalformedDataError` naming the file, line, column and byte.
    A missing file (or a directory) raises :class:`DataNotFoundError` here, at the
    call, rather than at the first line read.
    """
    path = Path(path)
    _require_file(path)
    return _decoded_lines(path)


def read_text(path: str | os.PathLike) -> str:
    """The whole file as UTF-8 text (for JSON and YAML), with :func:`open_text`'s rules and errors."""
    return "".join(open_text(path))


def _require_file(path: Path) -> None:
    if path.is_dir():
        raise DataNotFoundError(f"{path}: is a directory, not a data file; give the path of the file itself")
    if not path.exists():
        raise DataNotFoundError(
            f"{path}: no such file; check the path, or fetch the benchmark data with `lm-eval-bias download`"
        )


def _open_binary(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as error:
        if isinstance(error, (FileNotFoundError, IsADirectoryError)):
            _require_file(path)  # gone (or replaced) since the call: say so plainly
        raise DataError(f"{path}: cannot be read ({error.strerror or error}); check its permissions") from None


# A lone "\r" ends a line too (as in text mode); "\r\n" only occurs at the end of
# a binary line, which always ends at "\n".
_AFTER_LONE_CR = re.compile(r"(?<=\r)(?!\n)")


def _decoded_lines(path: Path) -> Iterator[str]:
    # Decoding each "\n"-terminated binary line on its own is exact: in UTF-8 the
    # byte 0x0A never occurs inside a multi-byte character.
    with _open_binary(path) as handle:
        lines_read = 0
        for raw in handle:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise _not_utf8(path, lines_read, raw, error) from None
            if lines_read == 0 and text.startswith("\ufeff"):
                text = text[1:]
            for line in _AFTER_LONE_CR.split(text) if "\r" in text else (text,):
                if line:
                    lines_read += 1
                    yield line


def _not_utf8(path: Path, lines_before: int, raw: bytes, error: UnicodeDecodeError) -> MalformedDataError:
    """The error for a byte that is not UTF-8, with its line and (1-based, in characters) column."""
    before = raw[: error.start]  # valid UTF-8: the error is at its first bad byte
    line = lines_before + 1 + before.count(b"\r") - before.count(b"\r\n")
    line_start = before.rfind(b"\r") + 1
    if lines_before == 0 and line_start == 0 and before.startswith(codecs.BOM_UTF8):
        line_start = len(codecs.BOM_UTF8)  # the BOM is no character of the line
    column = len(before[line_start:].decode("utf-8")) + 1
    return MalformedDataError(
        f"{path}, line {line}: not UTF-8 text (byte 0x{raw[error.start]:02x} at column {column}); "
        "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)"
    )


def _cache_file(source: DataSource) -> Path:
    """Where the cache keeps the source's official file."""
    return cache_dir() / source.benchmark / source.file_name


# --------------------------------------------------------------------------
# Finding a benchmark's file


def _how_to_provide(source: DataSource) -> str:
    """The ways to give a task the source's file, as a "To fix" list: only those its task accepts."""
    return (
        "To fix, do one of:\n"
        f"  - on a machine with internet, run `lm-eval-bias download {' '.join(_sources_read_together(source))} "
        f'--to DIR`, copy DIR here and set {DATA_DIR_ENV}=DIR (or pass --metadata \'{{"data_dir": "DIR"}}\');\n'
        f"  - {_own_copy_remedy(source)};\n"
        "  - go online once (unset the offline variables) so it is downloaded into the cache.\n"
        f"Public source: {source.urls[0]} ({source.license}, {source.homepage})"
    )


def _sources_read_together(source: DataSource) -> list[str]:
    """The sources a task reads with this one from one data directory (GenderPair: its three groups)."""
    if source.takes_data_file:
        return [source.name]
    siblings = [name for name, other in sources().items() if other.benchmark == source.benchmark]
    return siblings if source.name in siblings else [source.name]


def _own_copy_remedy(source: DataSource, copy: str | None = None) -> str:
    """How to give a task ``copy``, a file the user has: as data_file where the task takes one."""
    if source.takes_data_file:
        return f'pass {copy or "the file itself"} as --metadata \'{{"data_file": "/path/to/{source.file_name}"}}\''
    return (
        f"put {copy or 'your copy'} at DIR/{source.benchmark}/{source.file_name} and set {DATA_DIR_ENV}=DIR "
        f'(or pass --metadata \'{{"data_dir": "DIR"}}\'); this benchmark takes no data_file, it reads '
        "one file per group from the data directory"
    )


def resolve_data_file(
    source: DataSource,
    data_file: str | os.PathLike | None = None,
    data_dir: str | os.PathLike | None = None,
) -> Path:
    """Find (or fetch) the benchmark's file; see the module docstring for the order."""
    if data_file:
        path = Path(data_file).expanduser()
        if not path.is_file():
            raise DataNotFoundError(
                f"{source.name}: data_file {str(path)!r} does not exist or is not a file.\n" + _how_to_provide(source)
            )
        logger.info("%s: using data file %s", source.name, path)
        return path

    looked: list[str] = []
    if data_dir:
        data_dir_origin = "metadata data_dir"
    elif os.environ.get(DATA_DIR_ENV):
        data_dir, data_dir_origin = os.environ[DATA_DIR_ENV], DATA_DIR_ENV
    if data_dir:
        candidate = Path(data_dir).expanduser() / source.benchmark / source.file_name
        if candidate.is_file():
            logger.info("%s: using %s (from %s)", source.name, candidate, data_dir_origin)
            return candidate
        looked.append(f"data directory ({data_dir_origin}): {candidate}")

    cached = _cache_file(source)
    if cached.is_file():
        difference = official_difference(source, cached)
        if difference is None:
            logger.info("%s: using cached %s", source.name, cached)
            return cached
        if is_offline():
            raise DataError(
                f"{source.name}: the cached file {cached} is not the official {source.file_name!r} "
                f"({difference}), so it is not used.\n"
                f"To fix: delete it, then run `lm-eval-bias download {source.name}` with internet access "
                f"(elsewhere: with --to DIR, then copy DIR here and set {DATA_DIR_ENV}=DIR), or point "
                f'data_dir (--metadata \'{{"data_dir": "DIR"}}\' or {DATA_DIR_ENV}) at a directory '
                "holding a good copy."
            )
        logger.warning(
            "%s: the cached file %s is not the official one (%s); downloading it again", source.name, cached, difference
        )
        looked.append(f"cache: {cached} (not the official file: {difference})")
    else:
        looked.append(f"cache: {cached}")

    where = "".join(f"\n  - {place}" for place in looked)
    if is_offline():
        set_vars = ", ".join(n for n in OFFLINE_ENVS if os.environ.get(n))
        raise DataNotFoundError(
            f"{source.name}: data file {source.file_name!r} not found, and downloading is "
            f"off because {set_vars} is set.\nLooked in:{where}\n" + _how_to_provide(source)
        )
    try:
        return download(source, cache_dir())
    except NoGoodDownload as failed:
        raise DataNotFoundError(
            f"{source.name}: data file {source.file_name!r} not found locally and the "
            f"download failed:{failed.listing()}\nLooked in:{where}\n" + _how_to_provide(source)
        ) from None


# --------------------------------------------------------------------------
# Downloading (lm_eval_bias.downloads)


def fetch(source: DataSource, dest_dir: str | os.PathLike) -> Path:
    """Download the source's official file to ``dest_dir/<benchmark>/<file name>``.

    Parameters
    ----------
    source : DataSource
        The file to download; its URLs are tried in turn.
    dest_dir : str or path
        The data directory (or the cache) to download into.

    Returns
    -------
    Path
        The downloaded file, which passed every check (see the module docstring); the file
        that was there before is replaced only by a checked download.

    Raises
    ------
    DataError
        When no URL gave the official file, listing each URL with its reason.
    """
    try:
        return download(source, dest_dir)
    except NoGoodDownload as failed:
        folder = Path(dest_dir).expanduser() / source.benchmark
        raise DataError(
            f"{source.name}: could not download {source.file_name!r}; nothing was saved in {folder}. "
            f"Tried:{failed.listing()}\n"
            "To fix: if a URL could not be reached, check the internet connection (and proxy "
            "settings) and retry; if one served a different file, its upstream copy has changed: "
            "report it to the lm-eval-bias maintainers, and meanwhile "
            f"{_own_copy_remedy(source, 'a copy you trust')}."
        ) from None


def fetch_all(dest_dir: str | os.PathLike, names: Iterable[str] | None = None) -> list[Path]:
    """Download every (or the named) source's file into the data-directory layout, verified (:func:`fetch`)."""
    names = list(names) if names else sorted(sources())
    chosen = [get_source(name) for name in names]  # every name checked before anything is fetched
    return [fetch(source, dest_dir) for source in chosen]


# --------------------------------------------------------------------------
# Provenance of the file a benchmark read


def describe_file(source: DataSource, path: str | os.PathLike, n_rows: int) -> dict:
    """The provenance of a file a benchmark read, for the results file.

    Logs a warning for each way the file differs from the official one: a differing file
    still runs, so that users can evaluate a subset on purpose.

    Parameters
    ----------
    source : DataSource
        The source the file stands for.
    path : str or path
        The file the benchmark read.
    n_rows : int
        Its rows, as the benchmark counted them.

    Returns
    -------
    dict
        ``name``, ``path``, ``sha256``, ``rows``, ``official_sha256``, ``official_rows`` and
        ``official``: True when the file's sha256 is the official one (for a source without a
        published sha256: when ``n_rows`` is the official row count).
    """
    path = Path(path)
    digest = sha256_of(path)
    warnings = []
    if source.n_rows is not None and n_rows != source.n_rows:
        warnings.append(
            f"{source.name}: {path} has {n_rows} rows, the official file has "
            f"{source.n_rows}; scores are for this file, not the full benchmark"
        )
    if source.sha256 is not None and digest != source.sha256:
        warnings.append(f"{source.name}: {path} has sha256 {digest}, the official file has {source.sha256}")
    for message in warnings:
        logger.warning(message)
    if source.sha256 is not None:
        official = digest == source.sha256
    else:  # nothing to compare but the rows; a source with neither is never "official"
        official = source.n_rows is not None and n_rows == source.n_rows
    return {
        "name": source.name,
        "path": str(path),
        "sha256": digest,
        "rows": n_rows,
        "official_sha256": source.sha256,
        "official_rows": source.n_rows,
        "official": official,
    }
