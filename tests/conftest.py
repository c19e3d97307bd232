"""Test setup: everything offline, tiny models and small benchmark files built here.

Tests that need the released benchmark files take the ``winoqueer_dir`` or ``shared_data`` fixture, or
carry the ``shared_data`` marker: they skip unless the files are in ``../shared/data`` beside the clone
or in ``$LM_EVAL_BIAS_TEST_DATA``.
"""

import os

# Before any Hugging Face library is imported: nothing may reach the hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import logging  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

TESTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS_DIR))

from benchmark_data import shared_data_dir, write_data_dir  # noqa: E402
from tiny_models import build_tiny_gpt2, winoqueer_sentences  # noqa: E402


def pytest_addoption(parser):
    parser.addoption(
        "--regenerate-golden",
        action="store_true",
        help=(
            "rewrite tests/golden/*.json and tests/golden_request_path/*.json from this run (only with an "
            "intended task version bump)"
        ),
    )


def pytest_runtest_setup(item):
    if item.get_closest_marker("shared_data"):
        shared_data_dir()  # skips, saying where the files go


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The released benchmark files (``DIR/winoqueer``, ``DIR/tango``, ``DIR/gendercare``); skips
    the test, saying how to provide them, when they are absent."""
    return shared_data_dir()


@pytest.fixture(scope="session")
def winoqueer_dir(shared_data) -> Path:
    """The released WinoQueer files (``winoqueer_gender_subset.csv``, ``winoqueer_head_sample.csv``)."""
    return shared_data / "winoqueer"


@pytest.fixture(scope="session")
def generated_data_dir(tmp_path_factory) -> Path:
    """Small generated files of every benchmark in the data-directory layout (``benchmark_data``)."""
    return write_data_dir(tmp_path_factory.mktemp("generated-data"))


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory) -> Path:
    """A 2-layer random GPT-2 whose BPE is trained on ``tiny_models.winoqueer_sentences()``."""
    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"), winoqueer_sentences())


@pytest.fixture(scope="session")
def tiny_gpt2_long_context(tmp_path_factory) -> Path:
    """The tiny GPT-2 with room for the longest prompts (SCM's ~230 tokens) and their generations:
    lm-eval-bias refuses requests that would be cut to fit 128 positions."""
    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2-1024"), winoqueer_sentences(), n_positions=1024)


@pytest.fixture(autouse=True)
def fresh_package_logger():
    """A test that runs ``lm_eval_bias.cli.main`` in-process gives our logger a handler on the
    stderr pytest captured for it (closed afterwards) and stops it propagating to caplog: undo it."""
    logger = logging.getLogger("lm_eval_bias")
    handlers, propagate, level = list(logger.handlers), logger.propagate, logger.level
    yield
    logger.handlers[:] = handlers
    logger.propagate, logger.level = propagate, level


@pytest.fixture(autouse=True)
def isolated_data_locations(tmp_path, monkeypatch):
    """No test sees the user's cache or data directory."""
    monkeypatch.setenv("LM_EVAL_BIAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LM_EVAL_BIAS_DATA_DIR", raising=False)


@pytest.fixture(scope="session")
def tiny_detoxify(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Random 2-layer Detoxify checkpoints in Detoxify's own format, as
    ``{"original": (checkpoint, config_dir), "unbiased": (checkpoint, config_dir)}``."""
    from tiny_models import build_tiny_detoxify

    root = tmp_path_factory.mktemp("tiny-detoxify")
    return {flavour: build_tiny_detoxify(root / flavour, flavour) for flavour in ("original", "unbiased")}
