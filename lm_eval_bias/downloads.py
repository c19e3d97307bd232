"""Downloading a benchmark's official file through pooch, checked.

:func:`download` tries a source's pinned URLs (:mod:`lm_eval_bias.benchmark_records`) in turn
with :func:`pooch.retrieve`: over HTTP, with a tqdm progress bar where tqdm is installed, the
official sha256 checked, and the file written to a temporary name and moved into place only once
checked. Around pooch stay the checks no library makes for us: what a URL may serve instead of the
file (an empty body, a body cut short, a Git LFS pointer, an HTML page), each refused with the
reason a user can act on; the number of lines of a source without a published sha256 (TANGO
disclosure); the permissions the umask gives any new file (pooch's temporary files are 0600,
and a downloaded folder is shared as it is); and the removal of what killed downloads left.
:mod:`lm_eval_bias.data` decides when to download (its resolution order and offline rules).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from lm_eval_bias.benchmark_records import DataSource
from lm_eval_bias.errors import DataError

logger = logging.getLogger("lm_eval_bias")

DOWNLOAD_TIMEOUT_S = 60  # for connecting, and between two pieces of a body
DOWNLOAD_CHUNK_BYTES = 1 << 20
_LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/"
_HTML_STARTS = (b"<!doctype html", b"<html")
_HEAD_BYTES = 512  # how much of a body is kept to recognise an LFS pointer or an HTML page


def sha256_of(path: str | os.PathLike) -> str:
    """The file's sha256, as hex digits."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(DOWNLOAD_CHUNK_BYTES), b""):
            digest.update(block)
    return digest.hexdigest()


def count_rows(path: str | os.PathLike) -> int:
    """The non-empty lines of a JSON-lines file: its rows (a blank line is none, the last needs no newline)."""
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


def difference(source: DataSource, path: str | os.PathLike, sha256: str | None = None) -> str | None:
    """How the file differs from the source's official one, or None when it is the official one.

    A file is hashed each time it is checked: the largest (TANGO disclosure, ~400 MB) takes
    about a second, a small share of any run that generates text for it.

    Parameters
    ----------
    source : DataSource
        The source whose official file the file should be.
    path : str or path
        The file.
    sha256 : str, optional
        The file's sha256, when already known.

    Returns
    -------
    str or None
        For a source with a published sha256, the two hashes when they differ; for one without,
        the two numbers of non-empty lines (rows) when they differ.
    """
    if source.sha256 is not None:
        sha256 = sha256 or sha256_of(path)
        if sha256 != source.sha256:
            return f"sha256 {sha256}, the official file has {source.sha256}"
    elif source.n_rows is not None and (lines := count_rows(path)) != source.n_rows:
        return (
            f"{lines} non-empty lines, the official file has {source.n_rows} "
            f"(sha256 {sha256 or sha256_of(path)}; no official sha256 is published)"
        )
    return None


class _Rejected(Exception):
    """A URL whose response must not be used; the message says why."""


class NoGoodDownload(Exception):
    """No URL of a source gave the official file."""

    def __init__(self, failures: list[tuple[str, str]]):
        super().__init__(failures)
        self.failures = failures

    def listing(self) -> str:
        return "".join(f"\n  - {url}: {reason}" for url, reason in self.failures)


def download(source: DataSource, dest_dir: str | os.PathLike) -> Path:
    """Download the source's official file to ``dest_dir/<benchmark>/<file name>``, checked.

    Parameters
    ----------
    source : DataSource
        The file to download; its URLs are tried in turn.
    dest_dir : str or path
        The data directory (or the cache) to download into.

    Returns
    -------
    Path
        The downloaded file. What was at its place before is replaced only by a checked download.

    Raises
    ------
    NoGoodDownload
        When no URL gave the official file, with each URL's reason.
    DataError
        When the file cannot be written (e.g. a full disk): no other URL is tried.
    """
    import pooch  # here, not at the top: a run that reads its files from the cache needs none of it

    target = Path(dest_dir).expanduser() / source.benchmark / source.file_name
    _remove_stale_downloads(source, target.parent)
    failures: list[tuple[str, str]] = []
    # pooch downloads into an empty folder of this download's own (it would keep a file already
    # at its target unchecked when no sha256 is known); the checked file then replaces the target.
    with _download_folder(source, target.parent) as folder:
        for url in source.urls:
            logger.info("%s: downloading %s", source.name, url)
            checked = _CheckedDownload(source)
            known = f"sha256:{source.sha256}" if source.sha256 else None
            try:
                with _pooch_quiet():
                    downloaded = pooch.retrieve(url, known, fname=source.file_name, path=folder, downloader=checked)
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
            logger.info("%s: saved %s (%d bytes, sha256 %s)", source.name, target, checked.size, checked.sha256())
            return target
    raise NoGoodDownload(failures)


@contextlib.contextmanager
def _download_folder(source: DataSource, parent: Path) -> Iterator[Path]:
    try:
        parent.mkdir(parents=True, exist_ok=True)
        folder = tempfile.mkdtemp(dir=parent, prefix=f".{source.file_name}.", suffix=".download")
    except OSError as error:
        raise DataError(
            f"{source.name}: cannot write in {parent} ({error.strerror or error}); "
            "set LM_EVAL_BIAS_CACHE_DIR (or `lm-eval-bias download --to DIR`) to a writable directory"
        ) from None
    try:
        yield Path(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _pooch_quiet() -> Iterator[None]:
    """pooch's INFO lines (written to stderr by its own handler) repeat ours: keep only its warnings."""
    import pooch

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
        import pooch
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
        if (found := difference(self.source, self.path, sha256=self.sha256())) is not None:
            raise _Rejected(f"served a different file: {found}")

    def write(self, chunk: bytes) -> None:
        try:
            self._out.write(chunk)
        except OSError as error:  # no fault of the URL: the next one is not tried
            raise DataError(
                f"cannot write the download to {self.path} ({error.strerror or error}); free some disk "
                "space, or set LM_EVAL_BIAS_CACHE_DIR (or `lm-eval-bias download --to DIR`) to another directory"
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
