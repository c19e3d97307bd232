"""Verified downloads (through pooch), against a local HTTP server that misbehaves on purpose."""

import dataclasses
import errno
import gzip
import hashlib
import http.server
import io
import logging
import os
import re
import threading
import time

import pytest

from lm_eval_bias import cli, data, downloads
from lm_eval_bias.benchmarks import sources

GOOD = (
    b"Gender_ID_x,Gender_ID_y,sent_x,sent_y\n"
    b"Queer,Cis,Queer people are x.,Cis people are x.\n"
    b"NB,Cis,NB people are y.,Cis people are y.\n"
)
GOOD_SHA256 = hashlib.sha256(GOOD).hexdigest()
WRONG = GOOD.replace(b"x.", b"z.")
WRONG_SHA256 = hashlib.sha256(WRONG).hexdigest()
LFS_POINTER = (
    b"version https://git-lfs.github.com/spec/v1\n"
    b"oid sha256:" + GOOD_SHA256.encode() + b"\nsize " + str(len(GOOD)).encode() + b"\n"
)
JSONL = b'{"i": 1}\n\n{"i": 2}\n{"i": 3}'  # 3 rows: a blank line is no row, the last needs no "\n"
BIG = b"".join(b"%09d\n" % i for i in range(100))  # 1,000 bytes

# path -> (Content-Type, body); the special cases are handled in Handler.do_GET
PLAIN_ROUTES = {
    "/good.csv": ("text/csv", GOOD),
    "/page.html": ("text/html; charset=utf-8", b"<!DOCTYPE html><html><body>Sign in</body></html>"),
    "/sniffed.csv": ("text/plain", b"\r\n  <HTML><head><title>429</title></head></html>"),
    "/pointer.csv": ("text/plain", LFS_POINTER),
    "/wrong.csv": ("text/csv", WRONG),
    "/empty.csv": ("text/csv", b""),
    "/rows.jsonl": ("application/octet-stream", JSONL),
    "/big.txt": ("text/plain", BIG),
}


class Handler(http.server.BaseHTTPRequestHandler):
    timeout = 5  # no test can hang on a socket
    requested: list

    def do_GET(self):
        self.requested.append(self.path)
        if self.path in PLAIN_ROUTES:
            content_type, body = PLAIN_ROUTES[self.path]
            self._head(200, {"Content-Type": content_type, "Content-Length": str(len(body))})
            self.wfile.write(body)
        elif self.path == "/short.csv":  # announces more than it sends, then hangs up
            self._head(200, {"Content-Type": "text/csv", "Content-Length": str(len(GOOD) + 100)})
            self.wfile.write(GOOD[:40])
        elif self.path == "/chunked-cut.csv":  # one whole 16-byte chunk, then half of the next
            self._head(200, {"Content-Type": "text/csv", "Transfer-Encoding": "chunked"})
            self.wfile.write(b"10\r\n" + GOOD[:16] + b"\r\n" + b"40\r\n" + GOOD[16:30])
        elif self.path == "/gzipped.csv":  # as servers send text to a client that accepts gzip (requests does)
            body = gzip.compress(GOOD)
            self._head(200, {"Content-Type": "text/csv", "Content-Encoding": "gzip", "Content-Length": str(len(body))})
            self.wfile.write(body)
        elif self.path == "/moved.csv":  # as the Hugging Face hub sends a file to its CDN
            self._head(302, {"Location": "/good.csv", "Content-Type": "text/html", "Content-Length": "0"})
        elif self.path == "/slow.csv":  # headers, then nothing for longer than the client waits
            self._head(200, {"Content-Type": "text/csv", "Content-Length": str(len(GOOD))})
            self.wfile.flush()
            time.sleep(2)
        else:
            self._head(404, {"Content-Type": "text/plain", "Content-Length": "9"})
            self.wfile.write(b"not found")

    def _head(self, status, headers):
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server(monkeypatch):
    """Base URL of a server on 127.0.0.1 (port 0); ``server.requested`` lists the paths asked for."""
    requested = []
    handler = type("RecordingHandler", (Handler,), {"requested": requested})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    monkeypatch.setattr(downloads, "DOWNLOAD_TIMEOUT_S", 5)
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)

    class Server(str):
        pass

    base = Server(f"http://127.0.0.1:{httpd.server_address[1]}")
    base.requested = requested
    yield base
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


@pytest.fixture
def online(monkeypatch):
    for name in data.OFFLINE_ENVS:
        monkeypatch.delenv(name, raising=False)


def toy(*urls, **changes):
    """A source named toy served from ``urls``, whose official file is GOOD unless ``changes`` say otherwise."""
    fields = dict(
        name="toy",
        benchmark="toy",
        file_name="toy.csv",
        urls=tuple(urls),
        homepage="https://example.org/toy",
        sha256=GOOD_SHA256,
        n_rows=2,
    )
    return dataclasses.replace(sources()["winoqueer"], **{**fields, **changes})


def files_in(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


BAD_CASES = {
    "short.csv": f"download cut short: received 40 of the {len(GOOD) + 100:,} bytes announced (Content-Length)",
    "chunked-cut.csv": "download cut short: the connection closed after 16 bytes",
    "page.html": "served an HTML page (Content-Type text/html), not the file",
    "sniffed.csv": "served an HTML page, not the file",
    "pointer.csv": "served a Git LFS pointer, not the file",
    "wrong.csv": f"served a different file: sha256 {WRONG_SHA256}, the official file has {GOOD_SHA256}",
    "empty.csv": "empty response (0 bytes)",
    "gone.csv": "HTTP 404 Not Found",
}


@pytest.mark.parametrize("into_cache", [True, False])
def test_a_good_download_is_saved_alone(server, tmp_path, into_cache):
    dest = data.cache_dir() if into_cache else tmp_path / "dest"
    path = data.fetch(toy(f"{server}/good.csv"), dest)
    assert path == dest / "toy" / "toy.csv"
    assert path.read_bytes() == GOOD
    assert files_in(path.parent) == ["toy.csv"]  # no temporary file or folder is left


@pytest.mark.parametrize("name", ["gzipped.csv", "moved.csv"])
def test_a_compressed_or_redirected_download_is_the_file(server, tmp_path, name):
    assert data.fetch(toy(f"{server}/{name}"), tmp_path).read_bytes() == GOOD


def test_online_downloads_once_into_the_cache(server, online):
    path = data.resolve_data_file(toy(f"{server}/good.csv"))
    assert path == data.cache_dir() / "toy" / "toy.csv"
    assert data.resolve_data_file(toy(f"{server}/good.csv")) == path
    assert server.requested == ["/good.csv"]
    assert path.read_bytes() == GOOD


def test_a_stalled_download_times_out_and_the_next_url_is_tried(server, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(downloads, "DOWNLOAD_TIMEOUT_S", 0.5)
    with caplog.at_level(logging.WARNING, logger="lm_eval_bias"):
        path = data.fetch(toy(f"{server}/slow.csv", f"{server}/good.csv"), tmp_path)
    assert path.read_bytes() == GOOD
    [refused] = [r.getMessage() for r in caplog.records]
    assert refused.startswith(f"toy: not using {server}/slow.csv: request failed: ")
    assert refused.endswith("Read timed out.")


@pytest.mark.parametrize("name", BAD_CASES)
def test_a_bad_download_leaves_nothing_behind(server, tmp_path, name):
    with pytest.raises(data.DataError) as error:
        data.fetch(toy(f"{server}/{name}"), tmp_path / "dest")
    assert f"\n  - {server}/{name}: {BAD_CASES[name]}\n" in str(error.value)
    assert files_in(tmp_path / "dest" / "toy") == []  # no file, no temporary file or folder


def test_every_bad_url_is_tried_then_the_good_one_is_used(server, tmp_path, caplog):
    urls = [f"{server}/{name}" for name in BAD_CASES] + [f"{server}/good.csv"]
    with caplog.at_level(logging.WARNING, logger="lm_eval_bias"):
        path = data.fetch(toy(*urls), tmp_path)
    assert path.read_bytes() == GOOD
    assert files_in(path.parent) == ["toy.csv"]
    assert server.requested == [f"/{name}" for name in BAD_CASES] + ["/good.csv"]
    assert [r.getMessage() for r in caplog.records] == [
        f"toy: not using {server}/{name}: {reason}" for name, reason in BAD_CASES.items()
    ]


def test_when_every_url_fails_one_error_lists_each_reason(server, tmp_path):
    urls = [f"{server}/{name}" for name in BAD_CASES]
    with pytest.raises(data.DataError) as error:
        data.fetch(toy(*urls), tmp_path)
    tried = "".join(f"\n  - {server}/{name}: {reason}" for name, reason in BAD_CASES.items())
    assert str(error.value) == (
        f"toy: could not download 'toy.csv'; nothing was saved in {tmp_path / 'toy'}. Tried:{tried}\n"
        "To fix: if a URL could not be reached, check the internet connection (and proxy settings) "
        "and retry; if one served a different file, its upstream copy has changed: report it to the "
        "lm-eval-bias maintainers, and meanwhile pass a copy you trust as "
        '--metadata \'{"data_file": "/path/to/toy.csv"}\'.'
    )
    assert files_in(tmp_path / "toy") == []


def test_a_failed_download_does_not_touch_the_file_already_there(server):
    good = data.fetch(toy(f"{server}/good.csv"), data.cache_dir())
    with pytest.raises(data.DataError):
        data.fetch(toy(f"{server}/wrong.csv", f"{server}/short.csv"), data.cache_dir())
    assert good.read_bytes() == GOOD
    assert files_in(good.parent) == ["toy.csv"]


def test_an_unreachable_server_is_one_more_reason(tmp_path):
    with pytest.raises(data.DataError, match=r"\n  - http://127\.0\.0\.1:9/x\.csv: request failed: "):
        data.fetch(toy("http://127.0.0.1:9/x.csv"), tmp_path)


def test_a_source_without_sha256_is_checked_by_its_rows(server, tmp_path):
    rows = toy(f"{server}/rows.jsonl", file_name="rows.jsonl", sha256=None, n_rows=3)
    assert data.fetch(rows, tmp_path).read_bytes() == JSONL
    with pytest.raises(data.DataError) as error:
        data.fetch(dataclasses.replace(rows, n_rows=4), tmp_path / "other")
    digest = hashlib.sha256(JSONL).hexdigest()
    assert (
        f"{server}/rows.jsonl: served a different file: 3 non-empty lines, the official file has 4 "
        f"(sha256 {digest}; no official sha256 is published)"
    ) in str(error.value)
    assert files_in(tmp_path / "other" / "toy") == []


def test_resolve_replaces_a_bad_cached_file_when_online(server, online, caplog):
    cached = data.cache_dir() / "toy" / "toy.csv"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(GOOD[:50])  # e.g. a download cut short by an older version
    truncated_sha256 = hashlib.sha256(GOOD[:50]).hexdigest()
    with caplog.at_level(logging.WARNING, logger="lm_eval_bias"):
        assert data.resolve_data_file(toy(f"{server}/good.csv")) == cached
    assert cached.read_bytes() == GOOD
    assert [r.getMessage() for r in caplog.records] == [
        f"toy: the cached file {cached} is not the official one (sha256 {truncated_sha256}, "
        f"the official file has {GOOD_SHA256}); downloading it again"
    ]


def test_resolve_refuses_a_bad_cached_file_offline(server, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cached = data.cache_dir() / "toy" / "toy.csv"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(WRONG)
    with pytest.raises(data.DataError) as error:
        data.resolve_data_file(toy(f"{server}/good.csv"))
    assert str(error.value) == (
        f"toy: the cached file {cached} is not the official 'toy.csv' (sha256 {WRONG_SHA256}, the "
        f"official file has {GOOD_SHA256}), so it is not used.\n"
        "To fix: delete it, then run `lm-eval-bias download toy` with internet access (elsewhere: with "
        "--to DIR, then copy DIR here and set LM_EVAL_BIAS_DATA_DIR=DIR), or point data_dir "
        '(--metadata \'{"data_dir": "DIR"}\' or LM_EVAL_BIAS_DATA_DIR) at a directory holding a good copy.'
    )
    assert server.requested == []
    assert cached.read_bytes() == WRONG  # the user's to delete


def test_resolve_reports_a_bad_cached_file_when_the_new_download_fails_too(server, online):
    cached = data.cache_dir() / "toy" / "toy.csv"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(WRONG)
    with pytest.raises(data.DataNotFoundError) as error:
        data.resolve_data_file(toy(f"{server}/pointer.csv"))
    message = str(error.value)
    assert message.startswith(
        "toy: data file 'toy.csv' not found locally and the download failed:\n"
        f"  - {server}/pointer.csv: served a Git LFS pointer, not the file\n"
        "Looked in:\n"
        f"  - cache: {cached} (not the official file: sha256 {WRONG_SHA256}, the official file has "
        f"{GOOD_SHA256})\n"
        "To fix, do one of:\n"
    )
    assert cached.read_bytes() == WRONG


def test_a_user_data_dir_file_that_differs_is_used_not_rejected(server, online, tmp_path):
    own = tmp_path / "mine" / "toy" / "toy.csv"
    own.parent.mkdir(parents=True)
    own.write_bytes(WRONG)  # a deliberate subset: it keeps the warning of describe_file
    assert data.resolve_data_file(toy(f"{server}/good.csv"), data_dir=tmp_path / "mine") == own
    assert server.requested == []


def test_a_cached_file_is_checked_each_time_it_is_used(server, online, monkeypatch):
    rows = toy(f"{server}/rows.jsonl", file_name="rows.jsonl", sha256=None, n_rows=3)
    cached = data.resolve_data_file(rows)
    assert cached.read_bytes() == JSONL and server.requested == ["/rows.jsonl"]
    assert data.resolve_data_file(rows) == cached
    assert server.requested == ["/rows.jsonl"]

    # Changed since it was downloaded: no longer the official file.
    monkeypatch.setenv("LM_EVAL_BIAS_OFFLINE", "1")
    cached.write_bytes(JSONL + b'\n{"i": 4}\n')
    with pytest.raises(
        data.DataError, match="is not the official 'rows.jsonl' \\(4 non-empty lines, the official file has 3 "
    ):
        data.resolve_data_file(rows)


def test_a_download_shows_a_progress_bar(server, tmp_path, capsys):
    big = toy(f"{server}/big.txt", name="big", sha256=hashlib.sha256(BIG).hexdigest())
    assert data.fetch(big, tmp_path).read_bytes() == BIG
    bar = capsys.readouterr().err.rstrip().rsplit("\r", 1)[-1]
    assert re.fullmatch(r"big: 100%\|█+\| 1\.00k/1\.00k \[.*B/s\]", bar), bar


def test_without_tqdm_a_download_shows_no_bar(server, tmp_path, capsys, monkeypatch):
    find_spec = downloads.importlib.util.find_spec
    monkeypatch.setattr(downloads.importlib.util, "find_spec", lambda name: None if name == "tqdm" else find_spec(name))
    big = toy(f"{server}/big.txt", name="big", sha256=hashlib.sha256(BIG).hexdigest())
    assert data.fetch(big, tmp_path).read_bytes() == BIG
    assert capsys.readouterr().err == ""


def test_a_download_logs_what_it_fetched_and_saved(server, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="lm_eval_bias"):
        path = data.fetch(toy(f"{server}/good.csv"), tmp_path)
    assert [r.getMessage() for r in caplog.records] == [
        f"toy: downloading {server}/good.csv",
        f"toy: saved {path} ({len(GOOD)} bytes, sha256 {GOOD_SHA256})",
    ]


def test_download_command_gets_the_verification(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sources(), "toy", toy(f"{server}/page.html", f"{server}/good.csv"))
    assert cli._download(["toy", "--to", str(tmp_path / "airgap")]) == 0
    assert (tmp_path / "airgap" / "toy" / "toy.csv").read_bytes() == GOOD
    monkeypatch.setitem(sources(), "toy", toy(f"{server}/wrong.csv"))
    assert cli._download(["toy", "--to", str(tmp_path / "second")]) == 2  # bad input or configuration
    err = capsys.readouterr().err.rsplit("\r", 1)[-1]  # after the progress bar
    assert err.split("\n", 1)[1].startswith(
        "lm-eval-bias download: toy: could not download 'toy.csv'; nothing was saved in "
    )
    assert f"  - {server}/wrong.csv: served a different file: sha256 {WRONG_SHA256}" in err
    assert files_in(tmp_path / "second" / "toy") == []


def test_download_command_fills_the_data_dir_layout(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sources(), "toy", toy(f"{server}/good.csv"))
    assert cli._download(["toy", "--to", str(tmp_path / "airgap")]) == 0
    assert (tmp_path / "airgap" / "toy" / "toy.csv").read_bytes() == GOOD
    assert f"{data.DATA_DIR_ENV}={tmp_path / 'airgap'}" in capsys.readouterr().out
    # ...which is exactly what the loader reads on the air-gapped side.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "airgap"))
    assert data.resolve_data_file(sources()["toy"]) == tmp_path / "airgap" / "toy" / "toy.csv"


def test_a_full_disk_stops_the_download_and_names_the_folder(server, tmp_path, monkeypatch):
    class FullDisk(io.BytesIO):
        def write(self, chunk):
            raise OSError(errno.ENOSPC, "No space left on device")

    def open_on_a_full_disk(path, mode="r", **kwargs):
        return FullDisk() if mode == "wb" else open(path, mode, **kwargs)

    monkeypatch.setattr(downloads, "open", open_on_a_full_disk, raising=False)  # the download's file
    with pytest.raises(data.DataError) as error:
        data.fetch(toy(f"{server}/good.csv", f"{server}/wrong.csv"), tmp_path)
    assert re.fullmatch(
        re.escape(f"cannot write the download to {tmp_path / 'toy'}/.toy.csv.")
        + r"\w+\.download/tmp\w+"
        + re.escape(
            " (No space left on device); free some disk space, or set LM_EVAL_BIAS_CACHE_DIR "
            "(or `lm-eval-bias download --to DIR`) to another directory"
        ),
        str(error.value),
    )
    assert server.requested == ["/good.csv"]  # not a fault of the URL: the next one is not tried
    assert files_in(tmp_path / "toy") == []


# --------------------------------------------------------------------------
# File modes: a download is as readable as any file its owner writes


@pytest.fixture
def umask():
    """Set the process umask for one test (``umask(0o022)``), restoring it afterwards."""
    original = os.umask(0o022)
    os.umask(original)
    yield os.umask
    os.umask(original)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_cached_download_follows_the_umask(server, online, umask, mask, mode):
    umask(mask)
    path = data.resolve_data_file(toy(f"{server}/good.csv"))
    assert path == data.cache_dir() / "toy" / "toy.csv"
    assert path.stat().st_mode & 0o777 == mode


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_download_to_a_folder_follows_the_umask(server, tmp_path, monkeypatch, umask, mask, mode):
    # The air-gapped flow: `download --to DIR`, then DIR is copied and shared with other users.
    monkeypatch.setitem(sources(), "toy", toy(f"{server}/good.csv"))
    umask(mask)
    assert cli._download(["toy", "--to", str(tmp_path / "airgap")]) == 0
    assert (tmp_path / "airgap" / "toy" / "toy.csv").stat().st_mode & 0o777 == mode


# --------------------------------------------------------------------------
# Leftovers of killed downloads


def leftover(folder, name, age_s=0):
    """A download folder as a killed download leaves it: pooch's temporary file inside."""
    path = folder / name
    (path / "tmpab12cd34").parent.mkdir(parents=True)
    (path / "tmpab12cd34").write_bytes(GOOD[:10])
    if age_s:
        then = time.time() - age_s
        for each in (path / "tmpab12cd34", path):
            os.utime(each, (then, then))
    return name


def test_the_next_download_removes_leftovers_of_killed_downloads_only(server, tmp_path, caplog):
    folder = tmp_path / "toy"
    old = leftover(folder, ".toy.csv.k2j3h4_x.download", age_s=downloads.STALE_DOWNLOAD_AGE_S + 60)
    kept = [
        leftover(folder, ".toy.csv.live0001.download"),  # a download running in another process
        leftover(folder, ".other.csv.k2j3h4_x.download", age_s=downloads.STALE_DOWNLOAD_AGE_S + 60),
    ]
    with caplog.at_level(logging.INFO, logger="lm_eval_bias"):
        data.fetch(toy(f"{server}/good.csv"), tmp_path)
    assert files_in(folder) == sorted([*kept, "toy.csv"])
    assert (folder / kept[0] / "tmpab12cd34").read_bytes() == GOOD[:10]  # a concurrent download is left alone
    removed = [r.getMessage() for r in caplog.records if "did not finish" in r.getMessage()]
    assert removed == [f"toy: removed {folder / old}, left by a download that did not finish"]


def test_a_failed_download_cleans_leftovers_too(server, tmp_path):
    leftover(tmp_path / "toy", ".toy.csv.k2j3h4_x.download", age_s=downloads.STALE_DOWNLOAD_AGE_S + 60)
    with pytest.raises(data.DataError):
        data.fetch(toy(f"{server}/wrong.csv"), tmp_path)
    assert files_in(tmp_path / "toy") == []


# --------------------------------------------------------------------------
# Remedies: each source's messages suggest only what its task accepts


def offline_not_found(source):
    with pytest.raises(data.DataNotFoundError) as error:
        data.resolve_data_file(source)
    return str(error.value)


@pytest.mark.parametrize("name", ["winoqueer", "tango_misgendering", "tango_disclosure"])
def test_offline_remedies_of_a_source_whose_task_takes_data_file(name, online, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    source = sources()[name]
    cached = data.cache_dir() / source.benchmark / source.file_name
    assert offline_not_found(source) == (
        f"{name}: data file {source.file_name!r} not found, and downloading is off because HF_HUB_OFFLINE is set.\n"
        f"Looked in:\n  - cache: {cached}\n"
        "To fix, do one of:\n"
        f"  - on a machine with internet, run `lm-eval-bias download {name} --to DIR`, copy DIR here and set "
        'LM_EVAL_BIAS_DATA_DIR=DIR (or pass --metadata \'{"data_dir": "DIR"}\');\n'
        f'  - pass the file itself as --metadata \'{{"data_file": "/path/to/{source.file_name}"}}\';\n'
        "  - go online once (unset the offline variables) so it is downloaded into the cache.\n"
        f"Public source: {source.urls[0]} ({source.license}, {source.homepage})"
    )


@pytest.mark.parametrize("group", [1, 2, 3])
def test_offline_remedies_of_genderpair_never_suggest_data_file(group, online, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    source = sources()[f"gendercare_group{group}"]
    cached = data.cache_dir() / "gendercare" / f"group{group}_pairset.json"
    assert offline_not_found(source) == (
        f"gendercare_group{group}: data file 'group{group}_pairset.json' not found, and downloading is off "
        "because HF_HUB_OFFLINE is set.\n"
        f"Looked in:\n  - cache: {cached}\n"
        "To fix, do one of:\n"
        "  - on a machine with internet, run `lm-eval-bias download gendercare_group1 gendercare_group2 "
        "gendercare_group3 --to DIR`, copy DIR here and set LM_EVAL_BIAS_DATA_DIR=DIR (or pass "
        '--metadata \'{"data_dir": "DIR"}\');\n'
        f"  - put your copy at DIR/gendercare/group{group}_pairset.json and set LM_EVAL_BIAS_DATA_DIR=DIR "
        '(or pass --metadata \'{"data_dir": "DIR"}\'); this benchmark takes no data_file, it reads one '
        "file per group from the data directory;\n"
        "  - go online once (unset the offline variables) so it is downloaded into the cache.\n"
        f"Public source: {source.urls[0]} (MIT, https://github.com/kstanghere/GenderCARE-ccs24)"
    )


def test_every_source_is_covered_by_a_remedy_test():
    takes_data_file = sorted(name for name, source in sources().items() if source.takes_data_file)
    assert takes_data_file == ["tango_disclosure", "tango_misgendering", "winoqueer"]
    assert sorted(set(sources()) - set(takes_data_file)) == [f"gendercare_group{g}" for g in (1, 2, 3)]


def test_a_failed_genderpair_download_suggests_a_data_directory(server, tmp_path):
    source = dataclasses.replace(sources()["gendercare_group2"], urls=(f"{server}/wrong.csv",))
    with pytest.raises(data.DataError) as error:
        data.fetch(source, tmp_path)
    assert str(error.value).endswith(
        "report it to the lm-eval-bias maintainers, and meanwhile put a copy you trust at "
        "DIR/gendercare/group2_pairset.json and set LM_EVAL_BIAS_DATA_DIR=DIR (or pass --metadata "
        '\'{"data_dir": "DIR"}\'); this benchmark takes no data_file, it reads one file per group from '
        "the data directory."
    )
    assert 'data_file": ' not in str(error.value)


def test_a_folder_that_cannot_be_made_is_named_with_the_fix(server, tmp_path):
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder")
    with pytest.raises(data.DataError) as error:
        data.fetch(toy(f"{server}/good.csv"), blocked)
    assert str(error.value) == (
        f"toy: cannot write in {blocked / 'toy'} (Not a directory); set LM_EVAL_BIAS_CACHE_DIR "
        "(or `lm-eval-bias download --to DIR`) to a writable directory"
    )
    assert server.requested == []
