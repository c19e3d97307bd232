"""Text classifiers that score model generations, shared by every benchmark that needs them.

A *scorer* turns a batch of texts into one list of floats per label:

* ``vader``: VADER's compound sentiment (label ``sentiment``, in [-1, 1]), from
  ``vaderSentiment``, whose lexicon ships in its wheel (works offline);
* ``detoxify``: Detoxify's toxicity classifier (labels as Detoxify names them, each
  in [0, 1]); ``original`` gives toxicity, severe_toxicity, obscene, threat, insult,
  identity_attack; ``unbiased`` gives toxicity, severe_toxicity, obscene,
  identity_attack, insult, threat, sexual_explicit.

Benchmarks use them through :class:`ClassifierFilter` in a task YAML::

    filter_list:
      - name: scored
        filter:
          - function: !function lm_eval_bias.scorers.ClassifierFilter
            scorers: [detoxify, vader]

Detoxify's weights are a GitHub release file that Detoxify downloads on first use.
Offline (any of ``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``, ``TRANSFORMERS_OFFLINE``,
``LM_EVAL_BIAS_OFFLINE`` set) it needs a local checkpoint and a local folder with the
base model's config and tokenizer. Each Detoxify option is taken from, in order:

1. an explicit argument (a filter's YAML keyword, or ``get_scorer``/``DetoxifyScorer``);
   our tasks pass their ``--metadata`` ``detoxify_model``, ``detoxify_checkpoint``,
   ``detoxify_config_dir``, ``detoxify_dtype`` to their filters this way, and load the
   classifiers when the task is built, before any generation
   (``harness.SubgroupMetricsTask``);
2. process defaults set with :func:`configure` (for tasks of your own that use the filter);
3. ``LM_EVAL_BIAS_DETOXIFY_MODEL``, ``LM_EVAL_BIAS_DETOXIFY_CHECKPOINT``,
   ``LM_EVAL_BIAS_DETOXIFY_CONFIG_DIR``, ``LM_EVAL_BIAS_DETOXIFY_DTYPE``;
4. Detoxify's own default (model ``original``, downloaded weights, float32).

Detoxify runs in float32 by default, exactly as Detoxify's own ``predict``. Option
``dtype`` (``detoxify_dtype``, ``LM_EVAL_BIAS_DETOXIFY_DTYPE``) set to ``bfloat16``
runs the model under bfloat16 autocast instead: scores move by about 1e-3, and on
CPUs with native bfloat16 (AVX512-BF16, AMX) it is about 3x faster (GPUs with
bfloat16 should gain too; not measured). It is opt-in, because a leaderboard
compares numbers across runs.

A classifier that cannot be loaded or fails on a batch raises :class:`ScorerError`
with the scorer, batch and text in the message: a failure is never scored as 0. An
empty generation (nothing, or whitespace) is never given to a classifier: the filter
marks it ``"empty": True`` and the benchmarks count it in ``empty_rate``.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from lm_eval.api.filter import Filter

from lm_eval_bias.data import OFFLINE_ENVS, DataError, is_offline
from lm_eval_bias.errors import ConfigurationError

logger = logging.getLogger("lm_eval_bias")

DETOXIFY_MODEL_ENV = "LM_EVAL_BIAS_DETOXIFY_MODEL"
DETOXIFY_CHECKPOINT_ENV = "LM_EVAL_BIAS_DETOXIFY_CHECKPOINT"
DETOXIFY_CONFIG_DIR_ENV = "LM_EVAL_BIAS_DETOXIFY_CONFIG_DIR"
DETOXIFY_DTYPE_ENV = "LM_EVAL_BIAS_DETOXIFY_DTYPE"
DETOXIFY_INSTALL = 'pip install "detoxify==0.5.4"  (name your torch, e.g. "torch==2.13.0", in the same command)'
VADER_INSTALL = 'pip install "vaderSentiment==3.3.2"'
DEFAULT_DETOXIFY_MODEL = "original"
DEFAULT_BATCH_SIZE = 64
# float32 is Detoxify's own predict(); bfloat16 is our opt-in autocast path.
DETOXIFY_DTYPES = ("float32", "bfloat16")
DEFAULT_DETOXIFY_DTYPE = "float32"

# What Detoxify 0.5.4's predict() returns per model (after its own renaming of the
# Jigsaw names toxic/severe_toxic/identity_hate). "unbiased" checkpoints have 16
# outputs but name only the first 7; the 9 identity outputs are never returned.
DETOXIFY_LABELS: dict[str, tuple[str, ...]] = {
    "original": ("toxicity", "severe_toxicity", "obscene", "threat", "insult", "identity_attack"),
    "unbiased": ("toxicity", "severe_toxicity", "obscene", "identity_attack", "insult", "threat",
                 "sexual_explicit"),
}
# The hub id each released checkpoint names as its config and tokenizer source
# (``config.arch.args.model_type`` inside the .ckpt); only used in messages.
DETOXIFY_BASE_MODELS = {
    "original": "bert-base-uncased",
    "unbiased": "roberta-base",
    "multilingual": "xlm-roberta-base",
    "original-small": "albert-base-v2",
    "unbiased-small": "albert-base-v2",
}
# Detoxify 0.5.4 renames these Jigsaw class names inside load_checkpoint(); the
# offline loader below builds the model itself, so it must rename the same way.
_DETOXIFY_RENAMES = {"toxic": "toxicity", "severe_toxic": "severe_toxicity", "identity_hate": "identity_attack"}
# Position ids of these architectures start after the padding index, so they fit
# max_position_embeddings - (pad_token_id + 1) tokens, not max_position_embeddings.
_PADDING_OFFSET_MODELS = {"roberta", "xlm-roberta", "camembert"}
_TEXT_KEY = "text"
EMPTY_KEY = "empty"


class ScorerError(DataError):
    """A classifier could not be loaded or failed; the message says where and how to fix it."""


class ScorerUnavailableError(ScorerError):
    """A classifier's package, weights or config files are missing."""


@runtime_checkable
class Scorer(Protocol):
    """Anything that scores a batch of texts with one float per text and label."""

    name: str
    labels: tuple[str, ...]

    def score(self, texts: Sequence[str]) -> dict[str, list[float]]:
        """One list per label in ``labels``, each as long as ``texts`` and in its order."""
        ...


# --------------------------------------------------------------------------
# Option resolution: explicit > configure() > environment > default

_configured: dict[str, str] = {}
_CONFIGURABLE = {
    "detoxify_model": DETOXIFY_MODEL_ENV,
    "detoxify_checkpoint": DETOXIFY_CHECKPOINT_ENV,
    "detoxify_config_dir": DETOXIFY_CONFIG_DIR_ENV,
    "detoxify_dtype": DETOXIFY_DTYPE_ENV,
}


def configure(**metadata: Any) -> dict[str, str]:
    """Set process-wide scorer defaults from task metadata; return the current defaults.

    For tasks of your own that use :class:`ClassifierFilter` without our task class:
    call it from the task's ``custom_dataset`` hook with all the metadata it receives.
    Keys other than ``detoxify_model``, ``detoxify_checkpoint``, ``detoxify_config_dir``
    and ``detoxify_dtype`` are ignored, as are ``None`` and empty values (they mean
    "not given", so a task without the key does not undo another's). The defaults
    apply to scorers created afterwards.
    """
    for key in _CONFIGURABLE:
        value = metadata.get(key)
        if value is not None and str(value).strip():
            _configured[key] = str(value).strip()
    return dict(_configured)


def reset() -> None:
    """Forget :func:`configure` defaults and every cached scorer (for tests and notebooks)."""
    _configured.clear()
    _scorer_cache.clear()


def _pick(key: str, explicit: Any) -> tuple[str | None, str]:
    """The value of one Detoxify option and where it came from (for error messages)."""
    if explicit is not None and str(explicit).strip():
        return str(explicit).strip(), "argument"
    if key in _configured:
        return _configured[key], f"task metadata {key}"
    env = _CONFIGURABLE[key]
    if os.environ.get(env, "").strip():
        return os.environ[env].strip(), env
    return None, "default"


def resolve_detoxify_options(model_type: str | None = None, checkpoint: str | os.PathLike | None = None,
                             config_dir: str | os.PathLike | None = None,
                             dtype: str | None = None) -> dict[str, Any]:
    """Fill unset Detoxify options from :func:`configure`, then the environment.

    Returns ``model_type``, ``checkpoint`` and ``config_dir`` (absolute paths or
    ``None``), ``dtype`` (one of :data:`DETOXIFY_DTYPES`) and ``origins``, naming
    where each came from. An unknown dtype raises :class:`ScorerError`.
    """
    model, model_origin = _pick("detoxify_model", model_type)
    ckpt, ckpt_origin = _pick("detoxify_checkpoint", checkpoint)
    cfg, cfg_origin = _pick("detoxify_config_dir", config_dir)
    chosen_dtype, dtype_origin = _pick("detoxify_dtype", dtype)
    chosen_dtype = chosen_dtype.lower() if chosen_dtype else DEFAULT_DETOXIFY_DTYPE
    if chosen_dtype not in DETOXIFY_DTYPES:
        raise ScorerError(f"detoxify: dtype {chosen_dtype!r} (from {dtype_origin}) is not one of "
                          f"{', '.join(DETOXIFY_DTYPES)}; float32 gives Detoxify's own scores")
    return {
        "model_type": model or DEFAULT_DETOXIFY_MODEL,
        "checkpoint": str(Path(ckpt).expanduser().resolve()) if ckpt else None,
        "config_dir": str(Path(cfg).expanduser().resolve()) if cfg else None,
        "dtype": chosen_dtype,
        "origins": {"model_type": model_origin, "checkpoint": ckpt_origin, "config_dir": cfg_origin,
                    "dtype": dtype_origin},
    }


def default_device() -> str:
    """``cuda`` where there is a GPU, else ``cpu``; in one process of several (``accelerate launch``,
    ``torchrun``: ``LOCAL_RANK`` set) the GPU of that process, as lm-eval's ``hf`` model uses it.
    Classifiers load when a task is built, which ``lm-eval-bias`` does before the model and its
    ``Accelerator`` pick the process's GPU: a bare ``cuda`` would put every process's classifier
    on GPU 0."""
    import torch

    if not torch.cuda.is_available():
        return "cpu"
    local_rank = os.environ.get("LOCAL_RANK", "")
    if local_rank.isdigit() and int(local_rank) < torch.cuda.device_count():
        return f"cuda:{int(local_rank)}"
    return "cuda"


def _as_text_list(texts: Sequence[str], scorer: str) -> list[str]:
    # A bare string is a Sequence too; scoring it would silently score its characters.
    if isinstance(texts, str):
        raise TypeError(f"{scorer}: score() takes a sequence of texts, not one string")
    texts = list(texts)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{scorer}: text {index} is {type(text).__name__}, not str: {text!r:.80}")
    return texts


def _snippet(text: str, width: int = 80) -> str:
    return repr(text if len(text) <= width else text[:width] + "...")


# --------------------------------------------------------------------------
# VADER


class VaderScorer:
    """VADER compound sentiment (label ``sentiment``, in [-1, 1]), fully offline."""

    name = "vader"
    labels = ("sentiment",)

    def __init__(self) -> None:
        try:
            from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer
        except ImportError as error:
            raise ScorerUnavailableError(
                f"vader: the package vaderSentiment is not installed; run: {VADER_INSTALL}"
            ) from error
        self._analyzer = SentimentIntensityAnalyzer()

    def score(self, texts: Sequence[str]) -> dict[str, list[float]]:
        texts = _as_text_list(texts, self.name)
        values = []
        for index, text in enumerate(texts):
            try:
                values.append(float(self._analyzer.polarity_scores(text)["compound"]))
            except Exception as error:
                raise ScorerError(f"vader: scoring text {index} {_snippet(text)} failed: {error}") from error
        return {"sentiment": values}


# --------------------------------------------------------------------------
# Detoxify


def _import_detoxify():
    try:
        import detoxify.detoxify as module
    except ImportError as error:
        raise ScorerUnavailableError(
            f"detoxify: the package detoxify is not installed; run: {DETOXIFY_INSTALL}"
        ) from error
    return module


def _how_to_get_detoxify_files(model_type: str, urls: Mapping[str, str]) -> str:
    base = DETOXIFY_BASE_MODELS.get(model_type, "<the checkpoint's base model>")
    url = urls.get(model_type, "<the .ckpt of this model from github.com/unitaryai/detoxify/releases>")
    return (
        "To score offline, on a machine with internet:\n"
        f"  1. download the checkpoint: {url}\n"
        f"  2. save the {base} config and tokenizer into a folder DIR:\n"
        f"     python -c \"from transformers import AutoConfig, AutoTokenizer; "
        f"AutoConfig.from_pretrained('{base}').save_pretrained('DIR'); "
        f"AutoTokenizer.from_pretrained('{base}').save_pretrained('DIR')\"\n"
        "  3. copy both here and set "
        f"{DETOXIFY_CHECKPOINT_ENV}=/path/to/{url.rsplit('/', 1)[-1]} and {DETOXIFY_CONFIG_DIR_ENV}=DIR\n"
        "     (or give a benchmark the task metadata detoxify_checkpoint and detoxify_config_dir).\n"
        "Or go online once (unset the offline variables) so that Detoxify downloads its weights."
    )


def _check_config_dir(config_dir: str, origin: str) -> None:
    path = Path(config_dir)
    if not path.is_dir():
        raise ScorerUnavailableError(
            f"detoxify: config_dir {config_dir!r} (from {origin}) is not a directory; it must hold "
            "the base model's config.json and tokenizer files (save_pretrained of both)"
        )
    if not (path / "config.json").is_file():
        raise ScorerUnavailableError(
            f"detoxify: config_dir {config_dir!r} (from {origin}) has no config.json; save the base "
            "model's config and tokenizer there with save_pretrained"
        )


def _load_checkpoint_dict(checkpoint: str, origin: str, device: str) -> dict:
    import torch

    if not Path(checkpoint).is_file():
        raise ScorerUnavailableError(
            f"detoxify: checkpoint {checkpoint!r} (from {origin}) does not exist or is not a file"
        )
    try:
        # Detoxify checkpoints pickle a plain config dict beside the weights.
        loaded = torch.load(checkpoint, map_location=device, weights_only=False)
    except Exception as error:
        raise ScorerError(f"detoxify: cannot read checkpoint {checkpoint!r} (from {origin}): {error}") from error
    try:
        loaded["config"]["arch"]["args"]["model_type"]
        loaded["config"]["dataset"]["args"]["classes"]
        loaded["state_dict"]
    except (KeyError, TypeError):
        raise ScorerError(
            f"detoxify: {checkpoint!r} is not a Detoxify checkpoint: it needs config.arch.args, "
            "config.dataset.args.classes and state_dict"
        ) from None
    return loaded


def _detoxify_from_checkpoint_dict(module, loaded: dict, config_dir: str | None, device: str, where: str):
    """A real ``Detoxify`` object built from a loaded checkpoint with local config files.

    Works around detoxify 0.5.4 (unitaryai/detoxify PR #126, unmerged): its loader
    reads the config from the hub id stored in the checkpoint even when given a
    local ``huggingface_config_path``. Pointing the checkpoint's ``model_type`` at
    ``config_dir`` makes every read local. ``huggingface_config_path`` is left
    unset on purpose: with it, Detoxify builds the model from the folder's
    config.json alone, and a stock base-model config (2 labels) then fails to load
    the checkpoint's 6- or 16-output classifier.
    """
    args = dict(loaded["config"]["arch"]["args"])
    if config_dir is not None:
        args["model_type"] = config_dir
    labels = [_DETOXIFY_RENAMES.get(name, name) for name in loaded["config"]["dataset"]["args"]["classes"]]
    try:
        model, tokenizer = module.get_model_and_tokenizer(**args, state_dict=loaded["state_dict"])
    except Exception as error:
        raise ScorerError(f"detoxify: building the model from {where} failed: {error}") from error
    # Skip Detoxify.__init__ (it would load the checkpoint again, from the hub config);
    # everything predict() uses is set here exactly as __init__ sets it.
    detox = module.Detoxify.__new__(module.Detoxify)
    detox.model, detox.tokenizer, detox.class_names, detox.device = model, tokenizer, labels, device
    detox.model.to(device)
    return detox


def _cap_tokenizer_length(detox) -> None:
    """Make ``truncation=True`` in Detoxify's predict() actually truncate.

    A tokenizer saved without ``model_max_length`` reports a huge limit, so a long
    generation would overflow the position embeddings and crash the whole batch.
    """
    config = detox.model.config
    limit = getattr(config, "max_position_embeddings", None)
    if not limit:
        return
    if getattr(config, "model_type", "") in _PADDING_OFFSET_MODELS:
        limit -= (config.pad_token_id or 0) + 1
    if detox.tokenizer.model_max_length > limit:
        detox.tokenizer.model_max_length = limit


def _offline_without_checkpoint(module, model_type: str) -> ScorerUnavailableError:
    set_vars = ", ".join(name for name in OFFLINE_ENVS if os.environ.get(name))
    return ScorerUnavailableError(
        f"detoxify: no local checkpoint for model {model_type!r}, and downloading is off because "
        f"{set_vars} is set (no {DETOXIFY_CHECKPOINT_ENV} / {DETOXIFY_CONFIG_DIR_ENV} given).\n"
        + _how_to_get_detoxify_files(model_type, module.MODEL_URLS)
    )


def _download_checkpoint_dict(module, model_type: str, device: str) -> dict:
    """The released checkpoint, fetched (and cached) by torch.hub exactly as Detoxify does."""
    import torch

    try:
        return torch.hub.load_state_dict_from_url(module.MODEL_URLS[model_type], map_location=device,
                                                  weights_only=False)
    except Exception as error:
        raise ScorerUnavailableError(
            f"detoxify: downloading the {model_type!r} weights failed: {error}\n"
            + _how_to_get_detoxify_files(model_type, module.MODEL_URLS)
        ) from error


def load_detoxify(model_type: str, checkpoint: str | None, config_dir: str | None, device: str,
                  origins: Mapping[str, str] | None = None):
    """A ``detoxify.Detoxify`` for these (already resolved) options; see the module docstring.

    No checkpoint and no config folder is Detoxify's own default (download
    everything); any local file goes through the offline-safe build.
    """
    origins = origins or {}
    module = _import_detoxify()
    if checkpoint is None and model_type not in module.MODEL_URLS:
        raise ScorerError(
            f"detoxify: unknown model {model_type!r} (from {origins.get('model_type', 'argument')}); "
            f"known: {', '.join(module.MODEL_URLS)}; or give a checkpoint"
        )
    if config_dir is not None:
        _check_config_dir(config_dir, origins.get("config_dir", "argument"))
    if checkpoint is None and is_offline():
        raise _offline_without_checkpoint(module, model_type)

    if checkpoint is None and config_dir is None:
        try:
            detox = module.Detoxify(model_type=model_type, device=device)
        except Exception as error:
            raise ScorerUnavailableError(
                f"detoxify: loading model {model_type!r} (downloading its weights) failed: {error}\n"
                + _how_to_get_detoxify_files(model_type, module.MODEL_URLS)
            ) from error
    else:
        if checkpoint is None:
            loaded, where = _download_checkpoint_dict(module, model_type, device), f"the {model_type!r} release"
        else:
            loaded = _load_checkpoint_dict(checkpoint, origins.get("checkpoint", "argument"), device)
            where = f"checkpoint {checkpoint!r}"
        stored_base = loaded["config"]["arch"]["args"]["model_type"]
        # A checkpoint may already name a local folder; only a hub id needs config_dir offline.
        if config_dir is None and is_offline() and not Path(stored_base).is_dir():
            raise ScorerUnavailableError(
                f"detoxify: {where} reads its config and tokenizer from the hub id {stored_base!r}, and "
                f"downloading is off; set {DETOXIFY_CONFIG_DIR_ENV} to a folder with that model's config "
                f"and tokenizer.\n" + _how_to_get_detoxify_files(model_type, module.MODEL_URLS)
            )
        where += f" with config {config_dir or stored_base!r}"
        detox = _detoxify_from_checkpoint_dict(module, loaded, config_dir, device, where)
        _warn_on_unexpected_labels(model_type, detox.class_names, where)
    _cap_tokenizer_length(detox)
    return detox


def _warn_on_unexpected_labels(model_type: str, labels: Sequence[str], where: str) -> None:
    # A warning, not an error: a custom checkpoint may use its own labels on purpose.
    expected = DETOXIFY_LABELS.get(model_type)
    if expected is not None and tuple(labels) != expected:
        logger.warning("detoxify: %s has labels %s, not those of Detoxify's %r model %s",
                       where, list(labels), model_type, list(expected))


class DetoxifyScorer:
    """Detoxify's classifier, batched; labels as Detoxify names them, scores in [0, 1].

    ``model_type``, ``checkpoint`` and ``config_dir`` left as ``None`` are taken from
    :func:`configure`, then the ``LM_EVAL_BIAS_DETOXIFY_*`` environment variables,
    then Detoxify's default (``original``, downloaded). ``device`` defaults to
    ``cuda`` when available, else ``cpu``. Scoring runs ``batch_size`` texts at a
    time, with texts grouped by length so that batches carry little padding, through
    Detoxify's own ``predict`` (``dtype="float32"``, the default), or, with
    ``dtype="bfloat16"``, through the same tokenizer and model under bfloat16
    autocast, with the sigmoid taken in float32.
    """

    name = "detoxify"

    def __init__(self, model_type: str | None = None, checkpoint: str | os.PathLike | None = None,
                 config_dir: str | os.PathLike | None = None, device: str | None = None,
                 batch_size: int = DEFAULT_BATCH_SIZE, dtype: str | None = None) -> None:
        if int(batch_size) < 1:
            raise ValueError(f"detoxify: batch_size must be at least 1, got {batch_size!r}")
        options = resolve_detoxify_options(model_type, checkpoint, config_dir, dtype)
        self.model_type = options["model_type"]
        self.checkpoint = options["checkpoint"]
        self.config_dir = options["config_dir"]
        self.dtype = options["dtype"]
        self.device = device or default_device()
        self.batch_size = int(batch_size)
        if self.dtype == "bfloat16" and self.device == "cpu" and not _cpu_has_native_bfloat16():
            logger.warning("detoxify: this CPU has no native bfloat16 (AVX512-BF16 or AMX), so dtype "
                           "bfloat16 is emulated and likely slower than float32")
        started = time.perf_counter()
        self.detoxify = load_detoxify(self.model_type, self.checkpoint, self.config_dir, self.device,
                                      options["origins"])
        self.labels = tuple(self.detoxify.class_names)
        logger.info("detoxify: loaded %r (%s) on %s, %s, in %.1f s; labels %s", self.model_type,
                    self.checkpoint or "downloaded weights", self.device, self.dtype,
                    time.perf_counter() - started, ", ".join(self.labels))

    def __repr__(self) -> str:
        return (f"DetoxifyScorer(model_type={self.model_type!r}, checkpoint={self.checkpoint!r}, "
                f"config_dir={self.config_dir!r}, device={self.device!r}, batch_size={self.batch_size}, "
                f"dtype={self.dtype!r})")

    def score(self, texts: Sequence[str]) -> dict[str, list[float]]:
        from tqdm.auto import tqdm

        texts = _as_text_list(texts, self.name)
        # NaN, not 0, until filled: a slot left unscored by a bug must never read as "not toxic".
        scores: dict[str, list[float]] = {label: [math.nan] * len(texts) for label in self.labels}
        # Longest first: similar lengths share a batch (less padding), and a batch
        # that runs out of memory does so at once, not at the end.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        batches = [order[start:start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        with tqdm(total=len(texts), desc=f"detoxify ({self.device})", unit="text",
                  disable=len(batches) <= 1) as progress:
            for number, batch in enumerate(batches):
                batch_scores = self._predict(batch, [texts[i] for i in batch], number, len(batches))
                for label, values in batch_scores.items():
                    for index, value in zip(batch, values):
                        scores[label][index] = value
                progress.update(len(batch))
        return scores

    def _predict(self, indices: list[int], batch: list[str], number: int, total: int) -> dict[str, list[float]]:
        """One call of Detoxify's predict(), checked: every label, one finite value per text."""
        context = (f"detoxify ({self.model_type}, {self.device}, {self.dtype}): batch {number + 1}/{total} "
                   f"({len(batch)} texts, e.g. text {indices[0]} {_snippet(batch[0])})")
        try:
            raw = self.detoxify.predict(batch) if self.dtype == "float32" else self._predict_autocast(batch)
        except Exception as error:
            raise ScorerError(f"{context} failed: {type(error).__name__}: {error}") from error
        checked = {}
        for label in self.labels:
            values = raw.get(label)
            # predict() squeezes its output, so a batch of one comes back as a bare float.
            values = [values] if isinstance(values, (int, float)) else values
            if not isinstance(values, list) or len(values) != len(batch):
                raise ScorerError(f"{context}: predict() returned {values!r:.120} for {label!r}, "
                                  f"not {len(batch)} scores")
            if not all(math.isfinite(value) for value in values):
                raise ScorerError(f"{context}: predict() returned a non-finite {label!r} score")
            checked[label] = [float(value) for value in values]
        return checked

    def _predict_autocast(self, batch: list[str]) -> dict[str, list[float]]:
        """Detoxify's predict() with the model under autocast to ``self.dtype``.

        Same tokenizer call and model as predict(); the logits are cast back to
        float32 before the sigmoid, so scores are not rounded to bfloat16's 8-bit
        mantissa (which alone would move a score near 0.5 by up to 2e-3).
        """
        import torch

        detox = self.detoxify
        detox.model.eval()
        inputs = detox.tokenizer(batch, return_tensors="pt", truncation=True, padding=True).to(detox.model.device)
        device_type = torch.device(self.device).type
        with torch.inference_mode(), torch.autocast(device_type=device_type, dtype=getattr(torch, self.dtype)):
            logits = detox.model(**inputs)[0]
        scores = torch.sigmoid(logits.float()).cpu()
        return {label: scores[:, column].tolist() for column, label in enumerate(detox.class_names)}


def _cpu_has_native_bfloat16() -> bool:
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a private probe: absent means "cannot tell"
        return True


# --------------------------------------------------------------------------
# Registry


_scorer_cache: dict[tuple, Scorer] = {}


def _detoxify_key(options: dict[str, Any]) -> tuple:
    unknown = set(options) - {"model_type", "checkpoint", "config_dir", "device", "batch_size", "dtype"}
    if unknown:
        raise TypeError(f"detoxify: unknown option(s) {', '.join(sorted(unknown))}")
    resolved = resolve_detoxify_options(options.get("model_type"), options.get("checkpoint"),
                                        options.get("config_dir"), options.get("dtype"))
    return (
        ("model_type", resolved["model_type"]),
        ("checkpoint", resolved["checkpoint"]),
        ("config_dir", resolved["config_dir"]),
        ("device", options.get("device") or default_device()),
        ("batch_size", int(options.get("batch_size") or DEFAULT_BATCH_SIZE)),
        ("dtype", resolved["dtype"]),
    )


def _vader_key(options: dict[str, Any]) -> tuple:
    if options:
        raise TypeError(f"vader: takes no options, got {', '.join(sorted(options))}")
    return ()


# name -> (options -> cache key with every default filled in, factory taking the options).
# The factory gets the options as given, not as resolved, so that its error
# messages can still say where a path came from (argument, metadata, environment).
SCORERS = {
    "detoxify": (_detoxify_key, DetoxifyScorer),
    "vader": (_vader_key, VaderScorer),
}


def get_scorer(name: str, **options: Any) -> Scorer:
    """The named scorer, loaded once per process for each distinct set of options.

    Options are resolved first (explicit, then :func:`configure`, then environment),
    so two calls that end up with the same checkpoint share one loaded model, and a
    changed default loads a new one. ``None`` options count as not given.
    """
    if name not in SCORERS:
        raise ValueError(f"unknown scorer {name!r}; known: {', '.join(sorted(SCORERS))}")
    make_key, build = SCORERS[name]
    given = {key: value for key, value in options.items() if value is not None}
    key = (name, make_key(given))
    if key not in _scorer_cache:
        _scorer_cache[key] = build(**given)
    return _scorer_cache[key]


# --------------------------------------------------------------------------
# lm-eval filter


class ClassifierFilter(Filter):
    """lm-eval filter that replaces every generation by its classifier scores.

    YAML keywords: ``scorers`` (names, default ``[detoxify, vader]``), ``labels`` (the
    scores the task needs: a classifier that lacks one is an error when the filter is
    checked, not after generation), and for Detoxify ``detoxify_model``,
    ``detoxify_checkpoint``, ``detoxify_config_dir``, ``detoxify_dtype``, ``device``,
    ``batch_size`` (each wins over :func:`configure` and the environment).

    ``apply`` gets all of a task's generations at once, scores each distinct text
    once per scorer in batches, and puts, for each generation, the dict
    ``{"text": <generation>, "empty": False, <label>: <score>, ...}`` (every scorer's
    labels) where the generation was; an empty generation becomes
    ``{"text": <generation>, "empty": True}``, with no scores. What the task's
    ``process_results(doc, results)`` receives:

    * ``repeats: 1`` (the default): ``results == [[{"text": ..., "toxicity": ..., ...}]]``,
      one list (the doc's single generate_until request) holding one dict;
    * ``repeats: k`` with no other filter: ``results == [[d_1, ..., d_k]]``, one dict
      per sampled generation, in generation order;
    * after lm-eval's ``take_first`` filter (resps already one string per doc):
      ``results == [{"text": ..., ...}]``.

    :func:`scored_generations` flattens any of these into a list of dicts.
    """

    def __init__(self, scorers: Iterable[str] | str = ("detoxify", "vader"), detoxify_model: str | None = None,
                 detoxify_checkpoint: str | None = None, detoxify_config_dir: str | None = None,
                 device: str | None = None, batch_size: int | None = None,
                 detoxify_dtype: str | None = None, labels: Iterable[str] = ()) -> None:
        super().__init__()
        self.required_labels = [labels] if isinstance(labels, str) else list(labels)
        names = [scorers] if isinstance(scorers, str) else list(scorers)
        if not names:
            raise ValueError("ClassifierFilter: scorers is empty")
        unknown = [name for name in names if name not in SCORERS]
        if unknown:
            raise ValueError(f"ClassifierFilter: unknown scorer(s) {', '.join(map(repr, unknown))}; "
                             f"known: {', '.join(sorted(SCORERS))}")
        self.scorer_names = list(dict.fromkeys(names))
        self.options = {
            "detoxify": {"model_type": detoxify_model, "checkpoint": detoxify_checkpoint,
                         "config_dir": detoxify_config_dir, "device": device, "batch_size": batch_size,
                         "dtype": detoxify_dtype},
            "vader": {},
        }

    def load_scorers(self) -> list[Scorer]:
        """The (cached) scorers, checked to have distinct labels."""
        loaded = [get_scorer(name, **self.options.get(name, {})) for name in self.scorer_names]
        seen = {_TEXT_KEY: "the generation itself", EMPTY_KEY: "the empty-generation flag"}
        for scorer in loaded:
            for label in scorer.labels:
                if label in seen:
                    raise ValueError(f"ClassifierFilter: label {label!r} of {scorer.name} clashes with "
                                     f"{seen[label]}; use one of the two scorers per filter")
                seen[label] = scorer.name
        missing = [label for label in self.required_labels if label not in seen]
        if missing:
            given = "; ".join(
                f"{scorer.name}{' (' + scorer.checkpoint + ')' if getattr(scorer, 'checkpoint', None) else ''} "
                f"gives {', '.join(scorer.labels)}" for scorer in loaded)
            raise ScorerError(
                f"ClassifierFilter: the task needs the score(s) {', '.join(missing)}, which no classifier gives "
                f"({given}). Fix: a Detoxify model whose labels include them (original, unbiased)")
        return loaded

    def apply(self, resps: Iterable, docs: Sequence[dict]) -> list:
        resps = list(resps)
        texts = []
        for doc_index, doc_resps in enumerate(resps):
            items = [doc_resps] if isinstance(doc_resps, str) or doc_resps is None else doc_resps
            for item in items:
                if item is not None and not isinstance(item, str):
                    raise ConfigurationError(
                        f"ClassifierFilter: doc {doc_index} has a {type(item).__name__} response, not a "
                        f"string: {item!r:.80}. It scores generated text: use it only in generate_until tasks")
                texts.append(item)
        # Repeats and models often produce the same text more than once; empty ones are not text.
        unique = list(dict.fromkeys(text for text in texts if not is_empty_text(text)))
        empty = len(texts) - sum(not is_empty_text(text) for text in texts)
        if empty:
            logger.info("ClassifierFilter: %d of %d generations are empty: counted as empty, not scored",
                        empty, len(texts))
        columns: dict[str, list[float]] = {}
        for scorer in self.load_scorers() if unique else []:
            started = time.perf_counter()
            logger.info("ClassifierFilter: scoring %d generations (%d distinct) with %s",
                        len(texts) - empty, len(unique), scorer.name)
            result = scorer.score(unique)
            for label in scorer.labels:
                if len(result.get(label, ())) != len(unique):
                    raise ScorerError(f"ClassifierFilter: {scorer.name} returned no full {label!r} column")
                columns[label] = result[label]
            logger.info("ClassifierFilter: %s took %.1f s", scorer.name, time.perf_counter() - started)
        row_of = {text: row for row, text in enumerate(unique)}

        def scored(text: str | None) -> dict:
            if is_empty_text(text):
                return {_TEXT_KEY: text or "", EMPTY_KEY: True}
            row = row_of[text]
            return {_TEXT_KEY: text, EMPTY_KEY: False, **{label: values[row] for label, values in columns.items()}}

        return [scored(doc_resps) if isinstance(doc_resps, str) or doc_resps is None
                else [scored(t) for t in doc_resps]
                for doc_resps in resps]


def is_empty_text(text: str | None) -> bool:
    """A generation with no text (nothing, or only whitespace): never given to a classifier,
    which would score it like a neutral, non-toxic text."""
    return text is None or not text.strip()


def scored_generations(results: Sequence) -> list[dict]:
    """Flatten what ``process_results`` receives after :class:`ClassifierFilter` into one
    dict per generation (whatever the repeats, with or without ``take_first``).

    Empty generations come as ``{"text": ..., "empty": True}`` with no scores; see
    :func:`non_empty`.
    """
    flat = []
    for item in results:
        for generation in [item] if isinstance(item, Mapping) else item:
            if not isinstance(generation, Mapping) or _TEXT_KEY not in generation:
                raise TypeError(f"expected ClassifierFilter output (dicts with {_TEXT_KEY!r}), got "
                                f"{generation!r:.80}; does the task's filter_list use ClassifierFilter?")
            flat.append(dict(generation))
    return flat


def non_empty(generations: Sequence[Mapping]) -> list[Mapping]:
    """The scored generations among :func:`scored_generations`' output (empty ones left out)."""
    return [generation for generation in generations if not generation.get(EMPTY_KEY, False)]
