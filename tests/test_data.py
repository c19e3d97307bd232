import csv
import dataclasses
import hashlib
import json
import logging
import re

import pytest

from lm_eval_bias import data
from lm_eval_bias.benchmarks import sources

CSV = "Gender_ID_x,Gender_ID_y,sent_x,sent_y\nQueer,Cis,Queer people are x.,Cis people are x.\n"


@pytest.fixture
def source():
    """A source named toy whose official file is CSV (tests/test_data_download.py downloads)."""
    return dataclasses.replace(
        sources()["winoqueer"],
        name="toy",
        benchmark="toy",
        file_name="toy.csv",
        urls=("http://127.0.0.1:9/toy.csv",),
        sha256=hashlib.sha256(CSV.encode()).hexdigest(),
        n_rows=1,
    )


@pytest.fixture
def online(monkeypatch):
    for name in data.OFFLINE_ENVS:
        monkeypatch.delenv(name, raising=False)


def place(root, source, text=CSV):
    path = root / source.benchmark / source.file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_explicit_file_wins_over_everything(tmp_path, source, monkeypatch):
    explicit = tmp_path / "mine.csv"
    explicit.write_text(CSV)
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "env"))
    place(tmp_path / "env", source)
    place(data.cache_dir(), source)
    assert data.resolve_data_file(source, data_file=str(explicit)) == explicit


def test_missing_explicit_file_is_an_error_not_a_fallback(tmp_path, source):
    place(data.cache_dir(), source)
    with pytest.raises(data.DataNotFoundError) as error:
        data.resolve_data_file(source, data_file=str(tmp_path / "nope.csv"))
    assert "nope.csv" in str(error.value)
    assert "does not exist" in str(error.value)
    assert "lm-eval-bias download toy --to DIR" in str(error.value)


def test_metadata_data_dir_beats_environment_and_cache(tmp_path, source, monkeypatch):
    meta = place(tmp_path / "meta", source)
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "env"))
    place(tmp_path / "env", source)
    place(data.cache_dir(), source)
    assert data.resolve_data_file(source, data_dir=str(tmp_path / "meta")) == meta


def test_environment_data_dir_beats_cache(tmp_path, source, monkeypatch):
    env = place(tmp_path / "env", source)
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "env"))
    place(data.cache_dir(), source)
    assert data.resolve_data_file(source) == env


def test_cache_is_used_when_no_directory_has_the_file(tmp_path, source, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "empty"))
    cached = place(data.cache_dir(), source)
    assert data.resolve_data_file(source) == cached


def test_cache_dir_follows_xdg_when_not_set(tmp_path, monkeypatch):
    monkeypatch.delenv(data.CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert data.cache_dir() == tmp_path / "xdg" / "lm_eval_bias"


def test_offline_without_data_names_file_places_and_fix(tmp_path, source, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "dir"))
    with pytest.raises(data.DataNotFoundError) as error:
        data.resolve_data_file(source)
    message = str(error.value)
    assert "'toy.csv' not found" in message
    assert "HF_HUB_OFFLINE" in message
    assert str(tmp_path / "dir" / "toy" / "toy.csv") in message
    assert str(data.cache_dir() / "toy" / "toy.csv") in message
    assert "LM_EVAL_BIAS_DATA_DIR=DIR" in message
    assert '--metadata \'{"data_file": "/path/to/toy.csv"}\'' in message


def test_unknown_benchmark_lists_the_known_ones():
    with pytest.raises(
        data.DataError,
        match="unknown data source .nope.; known: gendercare_group1, gendercare_group2, "
        "gendercare_group3, tango_disclosure, tango_misgendering, winoqueer",
    ):
        data.get_source("nope")


# --------------------------------------------------------------------------
# open_text / read_text


def test_open_text_names_file_line_column_and_byte_of_a_latin1_byte(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("a,b\r\n1,2\r\nJosé,café\r\n".encode("latin-1"))
    lines = data.open_text(path)
    assert next(lines) == "a,b\r\n"
    assert next(lines) == "1,2\r\n"
    with pytest.raises(data.MalformedDataError) as error:
        next(lines)
    assert str(error.value) == (
        f"{path}, line 3: not UTF-8 text (byte 0xe9 at column 4); "
        "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)"
    )


def test_open_text_column_counts_characters_and_lines_count_quoted_line_breaks(tmp_path):
    path = tmp_path / "bad.csv"
    # "ü" is one character (two bytes); the quoted field spans lines 2-3.
    path.write_bytes('x,y\n"über\nzwei",ok\nbad: \x92quote\n'.encode("utf-8").replace(b"\xc2\x92", b"\x92"))
    with pytest.raises(
        data.MalformedDataError, match=re.escape(f"{path}, line 4: not UTF-8 text (byte 0x92 at column 6);")
    ):
        list(csv.reader(data.open_text(path)))


def test_read_text_names_the_bad_byte_too(tmp_path):
    path = tmp_path / "pairs.json"
    path.write_bytes(b'[\n  {"target": "\xe9l\xe8ve"}\n]\n')
    with pytest.raises(data.MalformedDataError) as error:
        data.read_text(path)
    assert str(error.value) == (
        f"{path}, line 2: not UTF-8 text (byte 0xe9 at column 15); "
        "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)"
    )


def test_a_bom_is_dropped_and_not_counted_as_a_column(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbfGender_ID_x,sent_x\r\nQueer,caf\xe9\r\n")
    with pytest.raises(data.MalformedDataError, match=re.escape("line 2: not UTF-8 text (byte 0xe9 at column 10)")):
        list(data.open_text(path))
    path.write_bytes(b"\xef\xbb\xbf\xe9")
    with pytest.raises(data.MalformedDataError, match=re.escape("line 1: not UTF-8 text (byte 0xe9 at column 1)")):
        data.read_text(path)
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\n')
    assert json.loads(data.read_text(path)) == {"a": 1}


TRICKY_CSV = (
    "\ufeffGender_ID_x,sent_x,sent_y\r\n"
    'Queer,"They said ""hi""\r\nthen left.",Straight people\u2019s line\r\n'
    'NB,"two\nlines, and a comma",x\r\n'
    'Lesbian,plain,"ends with CRLF inside\r\n"\r\n'
)


def test_csv_through_open_text_equals_csv_through_open(tmp_path):
    path = tmp_path / "tricky.csv"
    path.write_bytes(TRICKY_CSV.encode("utf-8"))
    with open(path, encoding="utf-8-sig", newline="") as handle:
        expected = list(csv.DictReader(handle))
    rows = list(csv.DictReader(data.open_text(path)))
    assert rows == expected
    assert [row["Gender_ID_x"] for row in rows] == ["Queer", "NB", "Lesbian"]
    assert rows[0]["sent_x"] == 'They said "hi"\r\nthen left.'
    assert rows[0]["sent_y"] == "Straight people\u2019s line"
    assert rows[1]["sent_x"] == "two\nlines, and a comma"
    assert rows[2]["sent_y"] == "ends with CRLF inside\r\n"


def test_lines_keep_their_endings_as_text_mode_with_newline_empty(tmp_path):
    path = tmp_path / "endings.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\rthree\n\nfour")
    with open(path, encoding="utf-8-sig", newline="") as handle:
        expected = list(handle)
    assert list(data.open_text(path)) == expected == ["one\r\n", "two\r", "three\n", "\n", "four"]
    assert data.read_text(path) == "one\r\ntwo\rthree\n\nfour"
    path.write_bytes(b"a\rb\r\xff")  # lines split by a lone CR count for the line number
    with pytest.raises(data.MalformedDataError, match=re.escape("line 3: not UTF-8 text (byte 0xff at column 1)")):
        list(data.open_text(path))


def test_empty_and_bom_only_files_have_no_lines(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    assert list(data.open_text(path)) == []
    path.write_bytes(b"\xef\xbb\xbf")
    assert list(data.open_text(path)) == [] and data.read_text(path) == ""


def test_open_text_streams_instead_of_reading_the_whole_file(tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_bytes(b'{"i": 0}\n' * 1000 + b"\xe9\n")
    lines = data.open_text(path)
    assert next(lines) == '{"i": 0}\n'  # the bad byte at the end is not reached yet
    with pytest.raises(data.MalformedDataError, match="line 1001: not UTF-8"):
        list(lines)


def test_a_missing_file_or_a_directory_is_a_clear_error(tmp_path):
    missing = tmp_path / "nope.csv"
    for read in (data.open_text, data.read_text):
        with pytest.raises(data.DataNotFoundError) as error:
            read(missing)  # at the call, not at the first line
        assert str(error.value) == (
            f"{missing}: no such file; check the path, or fetch the benchmark data with `lm-eval-bias download`"
        )
        with pytest.raises(data.DataNotFoundError) as error:
            read(tmp_path)
        assert str(error.value) == f"{tmp_path}: is a directory, not a data file; give the path of the file itself"


# --------------------------------------------------------------------------
# describe_file


def test_describe_file_of_the_official_file(tmp_path, source, caplog):
    path = place(tmp_path, source)
    with caplog.at_level(logging.WARNING, logger="lm_eval_bias"):
        record = data.describe_file(source, path, n_rows=1)
    assert record == {
        "name": "toy",
        "path": str(path),
        "sha256": source.sha256,
        "rows": 1,
        "official_sha256": source.sha256,
        "official_rows": 1,
        "official": True,
    }
    assert caplog.records == []


def test_describe_file_of_a_subset_warns_with_both_row_counts_and_hashes(tmp_path, source, caplog):
    text = CSV + "Queer,Cis,a b.,c b.\n"
    path = place(tmp_path, source, text)
    with caplog.at_level(logging.WARNING, logger="lm_eval_bias"):
        record = data.describe_file(source, str(path), n_rows=2)
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert record == {
        "name": "toy",
        "path": str(path),
        "sha256": digest,
        "rows": 2,
        "official_sha256": source.sha256,
        "official_rows": 1,
        "official": False,
    }
    assert [r.getMessage() for r in caplog.records] == [
        f"toy: {path} has 2 rows, the official file has 1; scores are for this file, not the full benchmark",
        f"toy: {path} has sha256 {digest}, the official file has {source.sha256}",
    ]


def test_describe_file_without_official_sha256_judges_by_rows(tmp_path, caplog):
    source = dataclasses.replace(
        sources()["tango_disclosure"], name="lines", benchmark="lines", file_name="lines.jsonl", n_rows=2
    )
    path = tmp_path / "lines.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n')
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert data.describe_file(source, path, n_rows=2) == {
        "name": "lines",
        "path": str(path),
        "sha256": digest,
        "rows": 2,
        "official_sha256": None,
        "official_rows": 2,
        "official": True,
    }
    with caplog.at_level(logging.WARNING, logger="lm_eval_bias"):
        assert data.describe_file(source, path, n_rows=1)["official"] is False
    assert [r.getMessage() for r in caplog.records] == [
        f"lines: {path} has 1 rows, the official file has 2; scores are for this file, not the full benchmark"
    ]


# --------------------------------------------------------------------------
# Pinned sources

_GITHUB_PINNED = re.compile(
    r"https://(raw\.githubusercontent\.com|media\.githubusercontent\.com/media)/[\w.-]+/[\w.-]+/[0-9a-f]{40}/"
)


def test_every_github_url_is_pinned_to_a_commit():
    github = [url for s in sources().values() for url in s.urls if "github" in url]
    assert len(github) == 7
    assert [url for url in github if not _GITHUB_PINNED.match(url)] == []


def test_every_source_tries_a_pinned_url_first():
    for source in sources().values():
        assert re.search(r"/[0-9a-f]{40}/", source.urls[0]), source.urls[0]
    # The only unpinned URL: the hub's main, as a fallback after the pinned revision.
    unpinned = [url for s in sources().values() for url in s.urls if not re.search(r"/[0-9a-f]{40}/", url)]
    assert unpinned == ["https://huggingface.co/datasets/AlexaAI/TANGO/resolve/main/disclosure.jsonl"]


def test_every_source_is_verifiable():
    """A download must have something to be checked against: a sha256, or a JSON-lines row count."""
    for source in sources().values():
        assert source.sha256 or (source.n_rows and source.file_name.endswith(".jsonl")), source.name


# --------------------------------------------------------------------------
# Provenance: every file is hashed as it is now


def test_a_file_changed_since_it_was_described_is_described_anew(tmp_path, source):
    path = place(tmp_path / "mine", source)
    assert data.describe_file(source, path, n_rows=1)["official"] is True
    path.write_text(CSV + "Queer,Cis,a b.,c b.\n")
    record = data.describe_file(source, path, n_rows=2)
    assert (record["sha256"], record["official"]) == (hashlib.sha256(path.read_bytes()).hexdigest(), False)
    assert sorted(p.name for p in path.parent.iterdir()) == ["toy.csv"]  # nothing written beside it
