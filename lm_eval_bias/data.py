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
hold only verified files. Downloads go through :func:`pooch.retrieve`: each of a
source's pinned URLs (:mod:`lm_eval_bias.benchmark_records`) in turn, over HTTP,
with a tqdm progress bar where tqdm is installed, the official sha256 checked, and
the file written to a temporary name and moved into place only once checked.
Around pooch, this module refuses what a URL may serve instead of the file (an
empty body, a body cut short, a Git LFS pointer, an HTML page) and, for a source
without a published sha256, checks the number of lines. The public URLs are pinned
to fixed commits, so the hashes stay true when the upstream repositories move on.
Downloads get the permissions the umask gives any new file (0644 under umask 022).

``lm-eval-bias download --to DIR`` fetches every benchmark's file into the
data-directory layout, for air-gapped clusters.

Benchmarks read their files with :func:`open_text` / :func:`read_text`, which
name the file, line and byte of any text that is not UTF-8.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import importlib.util
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import pooch

# Re-exported: benchmarks name their sources as data.WINOQUEER etc.
from lm_eval_bias.benchmark_records import (  # noqa: F401
    GENDERCARE_GROUP1,
    GENDERCARE_GROUP2,
    GENDERCARE_GROUP3,
    RECORDS,
    TANGO_DISCLOSURE,
    TANGO_MISGENDERING,
    WINOQUEER,
    DataSource,
)

# Re-exported: benchmarks raise them as data.DataError etc.
from lm_eval_bias.errors import DataError, DataNotFoundError, MalformedDataError  # noqa: F401
from lm_eval_bias.text import invisible_characters, is_invisible

logger = logging.getLogger("lm_eval_bias")

DATA_DIR_ENV = "LM_EVAL_BIAS_DATA_DIR"
CACHE_DIR_ENV = "LM_EVAL_BIAS_CACHE_DIR"
OFFLINE_ENVS = (
    "LM_EVAL_BIAS_OFFLINE",
    "HF_HUB_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "TRANSFORMERS_OFFLINE",
)
DOWNLOAD_TIMEOUT_S = 60  # for connecting, and between two pieces of a body
DOWNLOAD_CHUNK_BYTES = 1 << 20
_LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/"
_HTML_STARTS = (b"<!doctype html", b"<html")
_HEAD_BYTES = 512  # how much of a body is kept to recognise an LFS pointer or an HTML page

SOURCES: dict[str, DataSource] = {source.name: source for record in RECORDS.values() for source in record.sources}


def get_source(name: str) -> DataSource:
    """The data source named ``name`` (as ``lm-eval-bias download NAME`` names it).

    Raises
    ------
    DataError
        For an unknown name, listing the known ones.
    """
    try:
        return SOURCES[name]
    except KeyError:
        raise DataError(f"unknown data source {name!r}; known: {', '.join(sorted(SOURCES))}") from None


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


def refuse_invisible(where: str, field: str, value) -> None:
    r"""Refuse a data field (text, or a list of texts) that holds a character that cannot be seen.

    "casey\u200b" or "man\u200b" would be another row, target or keyword that looks like the
    first, and a pair whose sentences differ only by such a character would look like no pair.

    Parameters
    ----------
    where : str
        The file and the line or element, as messages name them.
    field : str
        The field's name.
    value : str or list of str
        The field's text (anything else is not checked).

    Raises
    ------
    MalformedDataError
        Naming the place, the field, its text around the first such character and every one found.
    """
    texts = [text for text in (value if isinstance(value, list) else [value]) if isinstance(text, str)]
    found = list(dict.fromkeys(name for text in texts for name in invisible_characters(text)))
    if not found:
        return
    text = next(text for text in texts if invisible_characters(text))
    at = next(position for position, char in enumerate(text) if is_invisible(char))
    shown = text if len(text) <= 80 else text[max(0, at - 30) : at + 30]
    raise MalformedDataError(
        f"{where}: {field} {shown!r} holds {', '.join(found)}, a character that cannot be seen (or a space "
        "other than the plain one), so it would look like other text. Fix: delete it, or type a plain space"
    )


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


# --------------------------------------------------------------------------
# Whether a file is the official one


def sha256_of(path: str | os.PathLike) -> str:
    """The file's sha256, as hex digits."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(DOWNLOAD_CHUNK_BYTES), b""):
            digest.update(block)
    return digest.hexdigest()


def _count_rows(path: Path) -> int:
    """The non-empty lines of a JSON-lines file: its rows (a blank line is none, the last needs no newline)."""
    with _open_binary(path) as handle:
        return sum(1 for line in handle if line.strip())


def _cache_file(source: DataSource) -> Path:
    """Where the cache keeps the source's official file."""
    return cache_dir() / source.benchmark / source.file_name


def _difference(source: DataSource, path: Path, sha256: str | None = None) -> str | None:
    """How the file differs from the source's official one, or None when it is the official one.

    A file is hashed each time it is checked: the largest (TANGO disclosure, ~400 MB) takes
    about a second, a small share of any run that generates text for it.
    """
    if source.sha256 is not None:
        sha256 = sha256 or sha256_of(path)
        if sha256 != source.sha256:
            return f"sha256 {sha256}, the official file has {source.sha256}"
    elif source.n_rows is not None and (lines := _count_rows(path)) != source.n_rows:
        return (
            f"{lines} non-empty lines, the official file has {source.n_rows} "
            f"(sha256 {sha256 or sha256_of(path)}; no official sha256 is published)"
        )
    return None


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
    siblings = [name for name, other in SOURCES.items() if other.benchmark == source.benchmark]
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
        difference = _difference(source, cached)
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
        return _fetch(source, cache_dir())
    except _NoGoodDownload as failed:
        raise DataNotFoundError(
            f"{source.name}: data file {source.file_name!r} not found locally and the "
            f"download failed:{failed.listing()}\nLooked in:{where}\n" + _how_to_provide(source)
        ) from None


# --------------------------------------------------------------------------
# Downloading, verified


class _Rejected(Exception):
    """A URL whose response must not be used; the message says why."""


class _NoGoodDownload(Exception):
    """No URL of a source gave the official file."""

    def __init__(self, failures: list[tuple[str, str]]):
        super().__init__(failures)
        self.failures = failures

    def listing(self) -> str:
        return "".join(f"\n  - {url}: {reason}" for url, reason in self.failures)


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
        return _fetch(source, dest_dir)
    except _NoGoodDownload as failed:
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
    names = list(names) if names else sorted(SOURCES)
    sources = [get_source(name) for name in names]  # every name checked before anything is fetched
    return [fetch(source, dest_dir) for source in sources]


def _fetch(source: DataSource, dest_dir: str | os.PathLike) -> Path:
    target = Path(dest_dir).expanduser() / source.benchmark / source.file_name
    _remove_stale_downloads(source, target.parent)
    failures: list[tuple[str, str]] = []
    # pooch downloads into an empty folder of this download's own (it would keep a file already
    # at its target unchecked when no sha256 is known); the checked file then replaces the target.
    with _download_folder(source, target.parent) as folder:
        for url in source.urls:
            logger.info("%s: downloading %s", source.name, url)
            download = _CheckedDownload(source)
            known_hash = f"sha256:{source.sha256}" if source.sha256 else None
            try:
                with _pooch_quiet():
                    downloaded = pooch.retrieve(url, known_hash, source.file_name, folder, downloader=download)
            except _Rejected as reason:
                logger.warning("%s: not using %s: %s", source.name, url, reason)
                failures.append((url, str(reason)))
                continue
            try:
                # pooch's temporary file is made by tempfile (0600); a download is shared as it is
                # (`download --to DIR`, then copied for other users): it gets the mode open() gives.
                os.chmod(downloaded, 0o666 & ~_umask())
                os.replace(downloaded, target)
            except OSError as error:
                raise DataError(
                    f"{source.name}: cannot save the download as {target} ({error.strerror or error}); "
                    "remove what is in the way, or download to another directory"
                ) from None
            logger.info("%s: saved %s (%d bytes, sha256 %s)", source.name, target, download.size, download.sha256())
            return target
    raise _NoGoodDownload(failures)


@contextlib.contextmanager
def _download_folder(source: DataSource, parent: Path) -> Iterator[Path]:
    try:
        parent.mkdir(parents=True, exist_ok=True)
        folder = tempfile.mkdtemp(dir=parent, prefix=f".{source.file_name}.", suffix=".download")
    except OSError as error:
        raise DataError(
            f"{source.name}: cannot write in {parent} ({error.strerror or error}); "
            f"set {CACHE_DIR_ENV} (or `lm-eval-bias download --to DIR`) to a writable directory"
        ) from None
    try:
        yield Path(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _pooch_quiet() -> Iterator[None]:
    """pooch's INFO lines (written to stderr by its own handler) repeat ours: keep only its warnings."""
    level = pooch.get_logger().level
    pooch.get_logger().setLevel(logging.WARNING)
    try:
        yield
    finally:
        pooch.get_logger().setLevel(level)


def _umask() -> int:
    """The process's umask, read without changing it where the system tells it (Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # the portable way: set it, and put it back at once
    os.umask(mask)
    return mask


# A running download writes at least every DOWNLOAD_TIMEOUT_S (else it gives up), so a download
# folder untouched for this long is what a killed download left behind.
STALE_DOWNLOAD_AGE_S = 3600


def _remove_stale_downloads(source: DataSource, parent: Path) -> None:
    """Remove the download folders that killed downloads of this source left in ``parent``."""
    pattern = re.compile(re.escape(f".{source.file_name}.") + r"[A-Za-z0-9_]+\.download")
    try:
        leftovers = [path for path in parent.iterdir() if pattern.fullmatch(path.name) and path.is_dir()]
    except OSError:
        return  # no folder yet, or not listable: nothing of ours to clean
    for folder in leftovers:
        try:
            last_write = max(path.stat().st_mtime for path in (folder, *folder.iterdir()))
        except OSError:
            continue  # removed meanwhile
        if time.time() - last_write > STALE_DOWNLOAD_AGE_S:
            shutil.rmtree(folder, ignore_errors=True)
            logger.info("%s: removed %s, left by a download that did not finish", source.name, folder)


def _progress_bar(source: DataSource):
    """A tqdm bar for pooch to fill, where tqdm is installed (closed by its caller, also on failure)."""
    if importlib.util.find_spec("tqdm") is None:
        return None
    from tqdm.auto import tqdm

    class Bar(tqdm):
        def __bool__(self) -> bool:
            return True  # a tqdm of total 0 is false, and pooch would not fill a body of unknown size

    return Bar(desc=source.name, total=0, unit="B", unit_scale=True, ncols=79, leave=True)


class _CheckedDownload:
    """A pooch downloader: pooch's HTTP download, refusing what is not the source's official file.

    pooch calls it with a URL and its temporary file, and checks the sha256 again once it returns;
    a refusal (:class:`_Rejected`) leaves pooch to delete that file. It is also the file object
    pooch writes to, keeping the body's size, sha256 and first bytes.
    """

    def __init__(self, source: DataSource):
        self.source = source
        self.size, self.head, self._digest = 0, b"", hashlib.sha256()
        self._announced: int | None = None  # the body's Content-Length, when the server says it

    def __call__(self, url: str, output_file: str, pooch_instance) -> None:
        import requests

        progress = _progress_bar(self.source)
        downloader = pooch.HTTPDownloader(
            progressbar=progress or False,
            chunk_size=DOWNLOAD_CHUNK_BYTES,
            timeout=DOWNLOAD_TIMEOUT_S,
            headers={"User-Agent": "lm-eval-bias"},
            hooks={"response": self._check_response},
        )
        self.path = Path(output_file)
        with open(output_file, "wb") as self._out, progress or contextlib.nullcontext():
            try:
                downloader(url, self, pooch_instance)
            except requests.HTTPError as error:
                raise _Rejected(f"HTTP {error.response.status_code} {error.response.reason}") from None
            except requests.exceptions.ChunkedEncodingError as error:
                raise _Rejected(self._cut_short(error)) from None
            except requests.RequestException as error:
                raise _Rejected(f"request failed: {error}") from None
            except ValueError as error:  # e.g. pooch reading a malformed Content-Length
                raise _Rejected(f"unusable response: {error}") from None
        if self.size == 0:
            raise _Rejected("empty response (0 bytes)")
        if self.head.startswith(_LFS_POINTER_PREFIX):
            raise _Rejected("served a Git LFS pointer, not the file")
        if self.head.lstrip().lower().startswith(_HTML_STARTS):
            raise _Rejected("served an HTML page, not the file")
        if (difference := _difference(self.source, self.path, sha256=self.sha256())) is not None:
            raise _Rejected(f"served a different file: {difference}")

    def write(self, chunk: bytes) -> None:
        try:
            self._out.write(chunk)
        except OSError as error:  # no fault of the URL: the next one is not tried
            raise DataError(
                f"cannot write the download to {self.path} ({error.strerror or error}); free some disk "
                f"space, or set {CACHE_DIR_ENV} (or `lm-eval-bias download --to DIR`) to another directory"
            ) from None
        self.size += len(chunk)
        self._digest.update(chunk)
        if len(self.head) < _HEAD_BYTES:
            self.head += chunk[: _HEAD_BYTES - len(self.head)]

    def flush(self) -> None:
        self._out.flush()

    def sha256(self) -> str:
        return self._digest.hexdigest()

    def _check_response(self, response, *args, **kwargs):
        """A requests hook, run on each response before its body is read."""
        if response.ok and not response.is_redirect:
            if response.headers.get("Content-Type", "").split(";")[0].strip().lower() == "text/html":
                response.close()
                raise _Rejected("served an HTML page (Content-Type text/html), not the file")
            length = response.headers.get("Content-Length", "")
            self._announced = int(length) if length.isdigit() else None
        return response

    def _cut_short(self, error: Exception) -> str:
        """Why a body ended early: the bytes received of those announced, else of an unknown number."""
        cause = error
        while cause is not None and not isinstance(getattr(cause, "expected", None), int):
            cause = cause.__context__  # down to the IncompleteRead that says how many bytes were missing
        if self._announced is not None and cause is not None:
            received, announced = self._announced - cause.expected, f"{self._announced:,} bytes announced"
            return f"download cut short: received {received:,} of the {announced} (Content-Length)"
        return f"download cut short: the connection closed after {self.size:,} bytes"


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
