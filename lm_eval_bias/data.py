"""One loader for every benchmark's public data file.

A benchmark's file is resolved in this order:

1. an explicit local file (task metadata ``data_file``);
2. a local data directory (metadata ``data_dir``, else the environment variable
   ``LM_EVAL_BIAS_DATA_DIR``) laid out as ``<dir>/<benchmark>/<official file name>``;
3. the local cache (``LM_EVAL_BIAS_CACHE_DIR``, else ``$XDG_CACHE_HOME/lm_eval_bias``,
   else ``~/.cache/lm_eval_bias``), same layout;
4. the public source, downloaded once into the cache, unless offline
   (``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``, ``TRANSFORMERS_OFFLINE`` or
   ``LM_EVAL_BIAS_OFFLINE`` set).

``lm-eval-bias download --to DIR`` fetches every benchmark's file into the
data-directory layout, for air-gapped clusters.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

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
DOWNLOAD_TIMEOUT_S = 60
_LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/"


@dataclass(frozen=True)
class DataSource:
    """Where a benchmark's official file comes from and what it should look like.

    ``name`` identifies the file (``lm-eval-bias download NAME``); it is stored
    as ``<dir>/<benchmark>/<file_name>``.
    """

    name: str
    benchmark: str
    file_name: str
    urls: tuple[str, ...]
    license: str
    homepage: str
    sha256: str | None = None
    n_rows: int | None = None


WINOQUEER = DataSource(
    name="winoqueer",
    benchmark="winoqueer",
    file_name="winoqueer_final.csv",
    # The file has been stored both as a Git LFS object and as a plain blob:
    # raw.githubusercontent serves the pointer for the former, media.* the content.
    urls=(
        "https://raw.githubusercontent.com/katyfelkner/winoqueer/main/data/winoqueer_final.csv",
        "https://media.githubusercontent.com/media/katyfelkner/winoqueer/main/data/winoqueer_final.csv",
    ),
    license="MIT",
    homepage="https://github.com/katyfelkner/winoqueer",
    sha256="1ed93f91834837b388c9129cd43c49dee70638fa6988634747565dd78c3c0237",
    n_rows=45540,
)

TANGO_MISGENDERING = DataSource(
    name="tango_misgendering",
    benchmark="tango",
    file_name="misgendering_prompts.csv",
    urls=(
        "https://raw.githubusercontent.com/amazon-science/tango/main/misgendering_prompts.csv",
        "https://raw.githubusercontent.com/amazon-science/tango/main/prompts/misgendering_prompts.csv",
    ),
    license="CC BY-SA 4.0",
    homepage="https://github.com/amazon-science/tango",
    sha256="dfa0d72b927939e63885a0219d8b3de5af837a50a50b5161c24aef0cfeee6ed7",
    n_rows=2880,
)

TANGO_DISCLOSURE = DataSource(
    name="tango_disclosure",
    benchmark="tango",
    # One file on the Hugging Face hub; GitHub splits the same rows into 8 CSV
    # parts, which also load once merged into one CSV (pass it as data_file).
    file_name="disclosure.jsonl",
    urls=("https://huggingface.co/datasets/AlexaAI/TANGO/resolve/main/disclosure.jsonl",),
    license="CC BY-SA 4.0",
    homepage="https://huggingface.co/datasets/AlexaAI/TANGO",
    n_rows=1532160,
)

def _genderpair_pair_set(group: int, sha256: str, n_targets: int) -> DataSource:
    """GenderPair's released pair set of one gender group (1, 2 or 3)."""
    return DataSource(
        name=f"gendercare_group{group}",
        benchmark="gendercare",
        file_name=f"group{group}_pairset.json",
        urls=(
            "https://raw.githubusercontent.com/kstanghere/GenderCARE-ccs24/main/Datasets/Assess_Gender_Bias/"
            f"Our_Benchmark_GenderPair/pair_sets/group{group}/group{group}_pairset.json",
        ),
        license="MIT",
        homepage="https://github.com/kstanghere/GenderCARE-ccs24",
        sha256=sha256,
        n_rows=n_targets,
    )


GENDERCARE_GROUP1 = _genderpair_pair_set(1, "687aaeced86d35abd3246aefa3c32ec6225d4c5e01fd46a372d36a2886fea181", 64)
GENDERCARE_GROUP2 = _genderpair_pair_set(2, "8b6d952ea2390009722b4fa4d758896b687f2caf320b46c26256b9af964babd3", 64)
GENDERCARE_GROUP3 = _genderpair_pair_set(3, "7af0ffbbef668f4b0cd32bb20da7681590609cb0bb9e9ab58d15dc22d5b54b48", 79)

SOURCES: dict[str, DataSource] = {
    source.name: source
    for source in (WINOQUEER, TANGO_MISGENDERING, TANGO_DISCLOSURE,
                   GENDERCARE_GROUP1, GENDERCARE_GROUP2, GENDERCARE_GROUP3)
}


def get_source(name: str) -> DataSource:
    try:
        return SOURCES[name]
    except KeyError:
        raise DataError(f"unknown data source {name!r}; known: {', '.join(sorted(SOURCES))}") from None


def is_offline() -> bool:
    return any(
        os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}
        for name in OFFLINE_ENVS
    )


def cache_dir() -> Path:
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "lm_eval_bias"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _how_to_provide(source: DataSource) -> str:
    return (
        "To fix, do one of:\n"
        f"  - on a machine with internet, run `lm-eval-bias download --to DIR`, copy DIR here and "
        f"set {DATA_DIR_ENV}=DIR (or pass --metadata '{{\"data_dir\": \"DIR\"}}');\n"
        f"  - pass the file itself: --metadata '{{\"data_file\": \"/path/to/{source.file_name}\"}}';\n"
        f"  - go online once (unset the offline variables) so it is downloaded into the cache.\n"
        f"Public source: {source.urls[0]} ({source.license}, {source.homepage})"
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
                f"{source.name}: data_file {str(path)!r} does not exist or is not a file.\n"
                + _how_to_provide(source)
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

    cached = cache_dir() / source.benchmark / source.file_name
    if cached.is_file():
        logger.info("%s: using cached %s", source.name, cached)
        return cached
    looked.append(f"cache: {cached}")

    where = "".join(f"\n  - {place}" for place in looked)
    if is_offline():
        set_vars = ", ".join(n for n in OFFLINE_ENVS if os.environ.get(n))
        raise DataNotFoundError(
            f"{source.name}: data file {source.file_name!r} not found, and downloading is "
            f"off because {set_vars} is set.\nLooked in:{where}\n" + _how_to_provide(source)
        )
    try:
        return fetch(source, cache_dir())
    except DataError as error:
        raise DataNotFoundError(
            f"{source.name}: data file {source.file_name!r} not found locally and the "
            f"download failed: {error}\nLooked in:{where}\n" + _how_to_provide(source)
        ) from error


def fetch(source: DataSource, dest_dir: str | os.PathLike) -> Path:
    """Download the source's file to ``dest_dir/<benchmark>/<file name>``."""
    target = Path(dest_dir).expanduser() / source.benchmark / source.file_name
    target.parent.mkdir(parents=True, exist_ok=True)
    failures = []
    for url in source.urls:
        logger.info("%s: downloading %s", source.name, url)
        try:
            request = urllib.request.Request(url, headers={"User-Agent": "lm-eval-bias"})
            with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_S) as response:
                content = response.read()
        except (OSError, ValueError) as error:
            failures.append(f"{url}: {error}")
            continue
        if content.startswith(_LFS_POINTER_PREFIX):
            failures.append(f"{url}: served a Git LFS pointer, not the file")
            continue
        if not content:
            failures.append(f"{url}: empty response")
            continue
        handle, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{source.file_name}.")
        with os.fdopen(handle, "wb") as out:
            out.write(content)
        os.replace(tmp, target)
        logger.info("%s: saved %s (%d bytes)", source.name, target, len(content))
        return target
    raise DataError("; ".join(failures))


def warn_if_not_official(source: DataSource, path: Path, n_rows: int) -> list[str]:
    """Log (and return) a warning for each way the file differs from the official one.

    A differing file still runs, so that users can evaluate a subset on purpose.
    """
    warnings = []
    if source.n_rows is not None and n_rows != source.n_rows:
        warnings.append(
            f"{source.name}: {path} has {n_rows} rows, the official file has "
            f"{source.n_rows}; scores are for this file, not the full benchmark"
        )
    if source.sha256 is not None:
        digest = sha256_of(path)
        if digest != source.sha256:
            warnings.append(
                f"{source.name}: {path} has sha256 {digest}, the official file has "
                f"{source.sha256}"
            )
    for message in warnings:
        logger.warning(message)
    return warnings


def fetch_all(dest_dir: str | os.PathLike, names: Iterable[str] | None = None) -> list[Path]:
    """Download every (or the named) source's file into the data-directory layout."""
    names = list(names) if names else sorted(SOURCES)
    return [fetch(get_source(name), dest_dir) for name in names]
