import dataclasses
import hashlib
import logging

import pytest

from lm_eval_bias import cli, data

CSV = "Gender_ID_x,Gender_ID_y,sent_x,sent_y\nQueer,Cis,Queer people are x.,Cis people are x.\n"


@pytest.fixture
def source(tmp_path):
    """A source whose 'public URLs' are local files, so downloads run offline."""
    upstream = tmp_path / "upstream" / "toy.csv"
    upstream.parent.mkdir()
    upstream.write_text(CSV)
    return dataclasses.replace(
        data.WINOQUEER,
        name="toy",
        benchmark="toy",
        file_name="toy.csv",
        urls=(upstream.as_uri(),),
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
    assert "lm-eval-bias download --to DIR" in str(error.value)


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


def test_online_downloads_once_into_the_cache(source, online):
    path = data.resolve_data_file(source)
    assert path == data.cache_dir() / "toy" / "toy.csv"
    assert path.read_text() == CSV
    path.write_text(CSV + "Queer,Cis,a b.,c b.\n")  # a second call must not re-download
    assert data.resolve_data_file(source).read_text().count("\n") == 3


def test_lfs_pointer_is_skipped_for_the_next_url(tmp_path, source, online):
    pointer = tmp_path / "pointer.csv"
    pointer.write_bytes(b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 1\n")
    source = dataclasses.replace(source, urls=(pointer.as_uri(), *source.urls))
    assert data.resolve_data_file(source).read_text() == CSV


def test_failed_download_says_what_was_tried(tmp_path, source, online):
    pointer = tmp_path / "pointer.csv"
    pointer.write_bytes(b"version https://git-lfs.github.com/spec/v1\n")
    source = dataclasses.replace(source, urls=(pointer.as_uri(), (tmp_path / "gone.csv").as_uri()))
    with pytest.raises(data.DataNotFoundError) as error:
        data.resolve_data_file(source)
    message = str(error.value)
    assert "download failed" in message
    assert "Git LFS pointer" in message
    assert "gone.csv" in message
    assert not (data.cache_dir() / "toy" / "toy.csv").exists()


def test_official_file_gives_no_warning(tmp_path, source, caplog):
    path = place(tmp_path, source)
    with caplog.at_level(logging.WARNING, logger="lm_eval_bias"):
        assert data.warn_if_not_official(source, path, n_rows=1) == []
    assert caplog.records == []


def test_subset_warns_with_both_row_counts_and_hashes(tmp_path, source, caplog):
    path = place(tmp_path, source, CSV + "Queer,Cis,a b.,c b.\n")
    with caplog.at_level(logging.WARNING, logger="lm_eval_bias"):
        warnings = data.warn_if_not_official(source, path, n_rows=2)
    assert len(warnings) == 2
    assert "has 2 rows, the official file has 1" in warnings[0]
    assert source.sha256 in warnings[1]
    assert hashlib.sha256(path.read_bytes()).hexdigest() in warnings[1]
    assert [r.getMessage() for r in caplog.records] == warnings


def test_unknown_benchmark_lists_the_known_ones():
    with pytest.raises(data.DataError, match="unknown data source .nope.; known: gendercare_group1, gendercare_group2, gendercare_group3, tango_disclosure, tango_misgendering, winoqueer"):
        data.get_source("nope")


def test_download_command_fills_the_data_dir_layout(tmp_path, source, online, monkeypatch, capsys):
    monkeypatch.setitem(data.SOURCES, "toy", source)
    assert cli._download(["toy", "--to", str(tmp_path / "airgap")]) == 0
    assert (tmp_path / "airgap" / "toy" / "toy.csv").read_text() == CSV
    assert f"{data.DATA_DIR_ENV}={tmp_path / 'airgap'}" in capsys.readouterr().out
    # ...which is exactly what the loader reads on the air-gapped side.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "airgap"))
    assert data.resolve_data_file(source) == tmp_path / "airgap" / "toy" / "toy.csv"


def test_download_command_reports_failure(tmp_path, source, online, monkeypatch, capsys):
    monkeypatch.setitem(
        data.SOURCES, "toy", dataclasses.replace(source, urls=((tmp_path / "x").as_uri(),))
    )
    assert cli._download(["toy", "--to", str(tmp_path / "out")]) == 1
    assert "lm-eval-bias download:" in capsys.readouterr().err
