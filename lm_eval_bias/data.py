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
hold only verified files: a download enters the cache only if it is complete
(Content-Length), is not empty, not a Git LFS pointer, not an HTML page, and has
the official sha256 (or, for a source without a published sha256, the official
number of lines). The public URLs are pinned to fixed commits, so the hashes stay
true when the upstream repositories move on. A verification stamp beside a file
spares re-reading it, in the cache only: a user's file (1, 2) is hashed, once per
process, whatever lies beside it. Downloads get the permissions the umask gives
any new file (0644 under umask 022), and a download removes what killed downloads
of the same file left behind (see :func:`_remove_stale_parts`).

``lm-eval-bias download --to DIR`` fetches every benchmark's file into the
data-directory layout, for air-gapped clusters.

Benchmarks read their files with :func:`open_text` / :func:`read_text`, which
name the file, line and byte of any text that is not UTF-8.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import http.client
import json
import logging
import os
import re
import socket
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

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
DOWNLOAD_TIMEOUT_S = 60
DOWNLOAD_CHUNK_BYTES = 1 << 20
# Progress of a download is logged every 10% of its Content-Length when it has
# one of at least PROGRESS_MIN_BYTES, else every PROGRESS_STEP_BYTES received.
PROGRESS_MIN_BYTES = 50_000_000
PROGRESS_STEP_BYTES = 50_000_000
_LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/"
_HTML_STARTS = (b"<!doctype html", b"<html")
_HEAD_BYTES = 512  # how much of a body is kept to recognise an LFS pointer or an HTML page


SOURCES: dict[str, DataSource] = {source.name: source for record in RECORDS.values() for source in record.sources}


def get_source(name: str) -> DataSource:
    try:
        return SOURCES[name]
    except KeyError:
        raise DataError(f"unknown data source {name!r}; known: {', '.join(sorted(SOURCES))}") from None


def is_offline() -> bool:
    return any(os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"} for name in OFFLINE_ENVS)


def cache_dir() -> Path:
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
# What a file holds: size, sha256, lines


@dataclass(frozen=True)
class _FileFacts:
    size: int
    sha256: str
    lines: int  # non-empty lines: the rows of a JSON-lines file


class _Measure:
    """Size, sha256 and non-empty line count of a byte stream fed in chunks, plus its first bytes."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()
        self.size = 0
        self.head = b""
        self._complete_lines = 0
        self._open_line_has_text = False  # the current (unterminated) line so far

    def update(self, chunk: bytes) -> None:
        self._digest.update(chunk)
        self.size += len(chunk)
        if len(self.head) < _HEAD_BYTES:
            self.head += chunk[: _HEAD_BYTES - len(self.head)]
        *ended, rest = chunk.split(b"\n")
        for part in ended:
            if self._open_line_has_text or part.strip():
                self._complete_lines += 1
            self._open_line_has_text = False
        self._open_line_has_text = self._open_line_has_text or bool(rest.strip())

    def facts(self) -> _FileFacts:
        lines = self._complete_lines + self._open_line_has_text
        return _FileFacts(self.size, self._digest.hexdigest(), lines)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _measure_file(path: Path) -> _FileFacts:
    measure = _Measure()
    with _open_binary(path) as handle:
        for block in iter(lambda: handle.read(DOWNLOAD_CHUNK_BYTES), b""):
            measure.update(block)
    return measure.facts()


# A stamp beside a verified file in the cache records its facts, keyed by size and
# mtime, so the 381 MB disclosure file is not re-read on every run. Stamps are read
# and written only in our own cache: beside a user's data_file or data_dir file, a
# stamp could be copied or crafted to call any file the official one.
def _stamp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.verified.json")


def _cache_file(source: DataSource) -> Path:
    """Where the cache keeps the source's official file."""
    return cache_dir() / source.benchmark / source.file_name


def _is_cache_file(source: DataSource, path: Path) -> bool:
    """Whether ``path`` is the source's file in our cache (the only place whose stamps are trusted)."""
    return os.path.realpath(path) == os.path.realpath(_cache_file(source))


def _facts_from_stamp(path: Path) -> _FileFacts | None:
    """The facts recorded for the file as it is now (same size and mtime), if any."""
    try:
        stamp = json.loads(_stamp_path(path).read_text(encoding="utf-8"))
        stat = path.stat()
        # ctime too: an edit that restores the size and mtime (touch -r) still changes it.
        if (stamp["size"], stamp["mtime_ns"], stamp.get("ctime_ns")) == (
            stat.st_size,
            stat.st_mtime_ns,
            stat.st_ctime_ns,
        ):
            return _FileFacts(stamp["size"], stamp["sha256"], stamp["lines"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no stamp, or an unreadable one: measure the file instead
    return None


def _write_stamp(path: Path, facts: _FileFacts) -> None:
    try:
        stat = path.stat()
        stamp = {
            "file": path.name,
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "ctime_ns": stat.st_ctime_ns,
            "sha256": facts.sha256,
            "lines": facts.lines,
        }
        handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".stamp")
        _give_umask_mode(handle)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(stamp, out)
        os.replace(tmp, _stamp_path(path))
    except OSError as error:
        # Only costs a re-check of the file next time.
        logger.info("could not record the verification of %s (%s)", path, error)


@functools.lru_cache(maxsize=32)
def _sha256_of_version(path: str, size: int, mtime_ns: int, ctime_ns: int) -> str:
    return sha256_of(Path(path))


def _sha256_cheaply(path: Path, trust_stamp: bool) -> str:
    """The file's sha256: from its stamp where ``trust_stamp`` (our cache), else hashed once per process
    and version of the file."""
    facts = _facts_from_stamp(path) if trust_stamp else None
    if facts is not None:
        return facts.sha256
    stat = path.stat()
    return _sha256_of_version(str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _difference(source: DataSource, facts: _FileFacts) -> str | None:
    """How a file differs from the source's official one, or None when it is the official one."""
    if source.sha256 is not None:
        if facts.sha256 != source.sha256:
            return f"sha256 {facts.sha256}, the official file has {source.sha256}"
    elif source.n_rows is not None and facts.lines != source.n_rows:
        return (
            f"{facts.lines} non-empty lines, the official file has {source.n_rows} "
            f"(sha256 {facts.sha256}; no official sha256 is published)"
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
        difference = _cached_file_difference(source, cached)
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


def _cached_file_difference(source: DataSource, cached: Path) -> str | None:
    """How the cached file differs from the official one (None: it is the official one)."""
    stamped = _facts_from_stamp(cached)
    facts = stamped or _measure_file(cached)
    difference = _difference(source, facts)
    if difference is None and stamped is None:
        _write_stamp(cached, facts)  # e.g. a file cached by an earlier version
    return difference


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

    Each URL is tried in turn; a download is streamed to a temporary file beside
    the target and moved into place only once it passed every check (see the
    module docstring), so the target is never a partial or wrong file. If no URL
    gives the official file, :class:`DataError` lists each URL with its reason.
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


def _fetch(source: DataSource, dest_dir: str | os.PathLike) -> Path:
    target = Path(dest_dir).expanduser() / source.benchmark / source.file_name
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise DataError(
            f"{source.name}: cannot create the folder {target.parent} ({error.strerror or error}); "
            f"set {CACHE_DIR_ENV} (or `lm-eval-bias download --to DIR`) to a writable directory"
        ) from None
    _remove_stale_parts(source, target.parent)
    opener = urllib.request.build_opener()  # reads the proxy settings as they are now
    failures: list[tuple[str, str]] = []
    for url in source.urls:
        logger.info("%s: downloading %s", source.name, url)
        try:
            downloaded, facts = _download_verified(source, url, target.parent, opener)
        except _Rejected as reason:
            logger.warning("%s: not using %s: %s", source.name, url, reason)
            failures.append((url, str(reason)))
            continue
        try:
            os.replace(downloaded, target)
        except OSError as error:
            downloaded.unlink(missing_ok=True)
            raise DataError(
                f"{source.name}: cannot save the download as {target} ({error.strerror or error}); "
                "remove what is in the way, or download to another directory"
            ) from None
        if _is_cache_file(source, target):
            _write_stamp(target, facts)
        logger.info("%s: saved %s (%d bytes, sha256 %s)", source.name, target, facts.size, facts.sha256)
        return target
    raise _NoGoodDownload(failures)


def _download_verified(
    source: DataSource, url: str, folder: Path, opener: urllib.request.OpenerDirector
) -> tuple[Path, _FileFacts]:
    """Stream ``url`` to a temporary file in ``folder`` and check it; on any failure the file is removed."""
    try:
        handle, name = tempfile.mkstemp(dir=folder, prefix=_part_prefix(source.file_name), suffix=".part")
        _give_umask_mode(handle)
    except OSError as error:
        raise DataError(
            f"{source.name}: cannot write in {folder} ({error.strerror or error}); "
            f"set {CACHE_DIR_ENV} (or `lm-eval-bias download --to DIR`) to a writable directory"
        ) from None
    partial = Path(name)
    try:
        with os.fdopen(handle, "wb") as out:
            facts = _download(source, url, _ChunkWriter(out, partial), opener)
        difference = _difference(source, facts)
        if difference is not None:
            raise _Rejected(f"served a different file: {difference}")
        return partial, facts
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _give_umask_mode(handle: int) -> None:
    """Give a file made by mkstemp (always 0600) the mode ``open()`` would: 0666 less the umask.

    A downloaded file is shared as it is (``download --to DIR``, then copied for other
    users), so it must be as readable as any other file its owner writes.
    """
    if hasattr(os, "fchmod"):  # POSIX; elsewhere mkstemp's file has the default permissions
        os.fchmod(handle, 0o666 & ~_umask())


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


# A download's temporary file is named after its writer, ".<file>.<pid>@<host>.<random>.part",
# so that the next download of the same file can tell a leftover of a killed download
# from the file of a download still running in another process.
STALE_PART_AGE_S = 3600
_HOST = re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname()) or "localhost"


def _part_prefix(file_name: str) -> str:
    return f".{file_name}.{os.getpid()}@{_HOST}."


def _remove_stale_parts(source: DataSource, folder: Path) -> None:
    """Remove the temporary files that killed downloads of this source left in ``folder``.

    A ``.part`` file is a leftover when its writer, a process of this machine, is
    gone, or when nothing wrote to it for :data:`STALE_PART_AGE_S` (a running
    download writes every chunk and gives up after a minute without data, so it is
    never that old; this also covers files of another machine sharing the folder).
    """
    pattern = re.compile(re.escape(f".{source.file_name}.") + r"(?:(\d+)@(.+)\.)?[A-Za-z0-9_]+\.part")
    try:
        candidates = [path for path in folder.iterdir() if pattern.fullmatch(path.name)]
    except OSError:
        return  # no folder yet, or not listable: nothing of ours to clean
    for path in candidates:
        writer = pattern.fullmatch(path.name)
        pid, host = (int(writer[1]), writer[2]) if writer[1] else (None, None)
        if _is_stale_part(path, pid, host):
            try:
                path.unlink()
                logger.info("%s: removed %s, left by a download that did not finish", source.name, path)
            except OSError:
                pass  # removed by another process meanwhile, or not ours to remove


def _is_stale_part(path: Path, pid: int | None, host: str | None) -> bool:
    try:
        age = time.time() - path.stat().st_mtime
    except OSError:
        return False
    if age > STALE_PART_AGE_S:
        return True
    return host == _HOST and pid is not None and not _process_exists(pid)


def _process_exists(pid: int) -> bool:
    if os.name == "nt":
        return True  # os.kill(pid, 0) would send Ctrl-C there: leave it to the age rule
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, as another user's process (EPERM)
    return True


class _ChunkWriter:
    """Writes a download to its temporary file; a local write failure is no fault of the URL."""

    def __init__(self, out: BinaryIO, path: Path):
        self.out, self.path = out, path

    def write(self, chunk: bytes) -> None:
        try:
            self.out.write(chunk)
        except OSError as error:
            raise DataError(
                f"cannot write the download to {self.path} ({error.strerror or error}); free some disk "
                f"space, or set {CACHE_DIR_ENV} (or `lm-eval-bias download --to DIR`) to another directory"
            ) from None


def _download(source: DataSource, url: str, out: _ChunkWriter, opener: urllib.request.OpenerDirector) -> _FileFacts:
    """Write the body of ``url`` to ``out``; raise :class:`_Rejected` unless it is a whole, plausible file."""
    measure = _Measure()
    announced: int | None = None
    lost_bytes: int | None = None  # set when the body was cut short
    request = urllib.request.Request(url, headers={"User-Agent": "lm-eval-bias"})
    try:
        with opener.open(request, timeout=DOWNLOAD_TIMEOUT_S) as response:
            if response.headers.get_content_type() == "text/html":
                raise _Rejected("served an HTML page (Content-Type text/html), not the file")
            announced = _content_length(response)
            progress = _Progress(source.name, announced)
            while chunk := response.read(DOWNLOAD_CHUNK_BYTES):
                out.write(chunk)
                measure.update(chunk)
                progress.update(measure.size)
    except http.client.IncompleteRead as error:
        # Not an OSError: a body cut short by the server or the network. Its
        # partial bytes were received but are not written: the file is rejected.
        lost_bytes = len(error.partial)
    except urllib.error.HTTPError as error:
        raise _Rejected(f"HTTP {error.code} {error.reason}") from None
    except urllib.error.URLError as error:
        raise _Rejected(f"request failed: {error.reason}") from None
    except (OSError, ValueError, http.client.HTTPException) as error:
        raise _Rejected(str(error) or type(error).__name__) from None

    received = measure.size + (lost_bytes or 0)
    if announced is not None and received != announced:
        raise _Rejected(
            f"download cut short: received {received:,} of the {announced:,} bytes announced (Content-Length)"
        )
    if lost_bytes is not None:
        raise _Rejected(f"download cut short: the connection closed after {received:,} bytes")
    if received == 0:
        raise _Rejected("empty response (0 bytes)")
    if measure.head.startswith(_LFS_POINTER_PREFIX):
        raise _Rejected("served a Git LFS pointer, not the file")
    if measure.head.lstrip().lower().startswith(_HTML_STARTS):
        raise _Rejected("served an HTML page, not the file")
    return measure.facts()


def _content_length(response) -> int | None:
    value = response.headers.get("Content-Length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None  # a malformed header: the body's own checks still apply


class _Progress:
    """INFO lines while a large download runs: every 10% of a known size, else every PROGRESS_STEP_BYTES."""

    def __init__(self, name: str, total: int | None):
        self.name, self.total = name, total
        if total is None:
            self.step = PROGRESS_STEP_BYTES
        elif total >= PROGRESS_MIN_BYTES:
            self.step = max(1, total // 10)
        else:
            self.step = None  # small: it is over before progress would help
        self.next_report = self.step

    def update(self, received: int) -> None:
        if self.step is None or received < self.next_report or received == self.total:
            return
        if self.total is None:
            logger.info("%s: %s bytes so far", self.name, f"{received:,}")
        else:
            logger.info(
                "%s: %s of %s bytes (%d%%)", self.name, f"{received:,}", f"{self.total:,}", 100 * received // self.total
            )
        self.next_report = (received // self.step + 1) * self.step


# --------------------------------------------------------------------------
# Provenance of the file a benchmark read


def describe_file(source: DataSource, path: str | os.PathLike, n_rows: int) -> dict:
    """The provenance of a file a benchmark read, for the results file.

    ``official`` is True when the file's sha256 is the official one (for a source
    without a published sha256: when ``n_rows`` is the official row count). The
    sha256 is read from a verification stamp only for the file in our cache; any
    other file (``data_file``, ``data_dir``) is hashed, once per process. Logs a
    warning for each way the file differs: a differing file still runs, so that
    users can evaluate a subset on purpose.
    """
    path = Path(path)
    digest = _sha256_cheaply(path, trust_stamp=_is_cache_file(source, path))
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
    record = {
        "name": source.name,
        "path": str(path),
        "sha256": digest,
        "rows": n_rows,
        "official_sha256": source.sha256,
        "official_rows": source.n_rows,
        "official": official,
    }
    return record


def fetch_all(dest_dir: str | os.PathLike, names: Iterable[str] | None = None) -> list[Path]:
    """Download every (or the named) source's file into the data-directory layout, verified."""
    names = list(names) if names else sorted(SOURCES)
    sources = [get_source(name) for name in names]  # every name checked before anything is fetched
    return [fetch(source, dest_dir) for source in sources]
