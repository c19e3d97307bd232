"""Detoxify's toxicity classifier: loading it (online, or offline from a local checkpoint and
config folder), batched scoring, and the opt-in bfloat16 autocast path.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from lm_eval_bias.data import OFFLINE_ENVS, is_offline
from lm_eval_bias.scorers.base import (
    ScorerError,
    ScorerUnavailableError,
    as_text_list,
    snippet,
)
from lm_eval_bias.scorers.config import (
    DEFAULT_BATCH_SIZE,
    DETOXIFY_CHECKPOINT_ENV,
    DETOXIFY_CONFIG_DIR_ENV,
    default_device,
    resolve_detoxify_options,
)
from lm_eval_bias.scorers.detoxify_files import check_config_dir, load_checkpoint_dict

logger = logging.getLogger("lm_eval_bias")


DETOXIFY_INSTALL = 'pip install "detoxify==0.5.4"  (name your torch, e.g. "torch==2.13.0", in the same command)'

# What Detoxify 0.5.4's predict() returns per model (after its own renaming of the
# Jigsaw names toxic/severe_toxic/identity_hate). "unbiased" checkpoints have 16
# outputs but name only the first 7; the 9 identity outputs are never returned.
DETOXIFY_LABELS: dict[str, tuple[str, ...]] = {
    "original": ("toxicity", "severe_toxicity", "obscene", "threat", "insult", "identity_attack"),
    "unbiased": ("toxicity", "severe_toxicity", "obscene", "identity_attack", "insult", "threat", "sexual_explicit"),
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
        f'     python -c "from transformers import AutoConfig, AutoTokenizer; '
        f"AutoConfig.from_pretrained('{base}').save_pretrained('DIR'); "
        f"AutoTokenizer.from_pretrained('{base}').save_pretrained('DIR')\"\n"
        "  3. copy both here and set "
        f"{DETOXIFY_CHECKPOINT_ENV}=/path/to/{url.rsplit('/', 1)[-1]} and {DETOXIFY_CONFIG_DIR_ENV}=DIR\n"
        "     (or give a benchmark the task metadata detoxify_checkpoint and detoxify_config_dir).\n"
        "Or go online once (unset the offline variables) so that Detoxify downloads its weights."
    )


def _download_again(module, model_type: str) -> str:
    """The fix for a downloaded release that is not whole: torch.hub keeps the damaged copy."""
    import torch

    name = module.MODEL_URLS[model_type].rsplit("/", 1)[-1]
    return f"delete {Path(torch.hub.get_dir()) / 'checkpoints' / name} so that it is downloaded again"


def _get_checkpoint_again(model_type: str, urls: Mapping[str, str], origin: str) -> str:
    """The fix for a bad checkpoint file: a complete copy of the release (where it is known)."""
    where_from = urls.get(model_type, "its source")
    setting = "the checkpoint argument" if origin in ("argument", "default") else origin
    return f"download it again ({where_from}) and point {setting} at the complete copy"


def _detoxify_from_checkpoint_dict(
    module, loaded: dict, config_dir: str | None, device: str, where: str, named: str, fix: str
):
    """A real ``Detoxify`` object built from a loaded checkpoint with local config files.

    ``where`` (the checkpoint and its config) is named when building fails, ``named`` (the
    checkpoint, and where its path came from) with ``fix`` when it lacks some of the model's weights.

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
        model, tokenizer, loading_info = _model_and_tokenizer(**args, state_dict=loaded["state_dict"])
    except Exception as error:
        raise ScorerError(f"detoxify: building the model from {where} failed: {error}") from error
    _check_every_weight_loaded(model, loading_info, named, fix)
    # Skip Detoxify.__init__ (it would load the checkpoint again, from the hub config);
    # everything predict() uses is set here exactly as __init__ sets it.
    detox = module.Detoxify.__new__(module.Detoxify)
    detox.model, detox.tokenizer, detox.class_names, detox.device = model, tokenizer, labels, device
    detox.model.to(device)
    return detox


def _model_and_tokenizer(model_type, model_name, tokenizer_name, num_classes, state_dict):
    """Detoxify 0.5.4's ``get_model_and_tokenizer`` (without ``huggingface_config_path``, see
    :func:`_detoxify_from_checkpoint_dict`), also returning transformers' loading info.

    Detoxify drops that info, and transformers starts any weight the state_dict lacks at random
    with only a table in the log: the scores would be noise, different on every load.
    """
    import transformers

    model_class = getattr(transformers, model_name)
    config = model_class.config_class.from_pretrained(model_type, num_labels=num_classes)
    model, loading_info = model_class.from_pretrained(
        pretrained_model_name_or_path=None, config=config, state_dict=state_dict, output_loading_info=True
    )
    tokenizer = getattr(transformers, tokenizer_name).from_pretrained(model_type)
    return model, tokenizer, loading_info


def _check_every_weight_loaded(model, loading_info: Mapping, named: str, fix: str) -> None:
    """Refuse a checkpoint that lacks some of the model's parameters (buffers such as position ids
    are rebuilt by the model, so they may be absent): those would be random numbers."""
    parameters = {name for name, _ in model.named_parameters(remove_duplicate=False)}
    missing = sorted(set(loading_info.get("missing_keys") or ()) & parameters)
    if not missing:
        return
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    # Old checkpoints hold buffers newer models rebuild (position ids): no weight under another name.
    buffers = {name for name, _ in model.named_buffers(remove_duplicate=False)}
    unexpected = sorted(set(loading_info.get("unexpected_keys") or ()) - buffers)
    other_names = (
        f"; it holds {len(unexpected)} weight{'s' if len(unexpected) != 1 else ''} under names the model does "
        f"not have (e.g. {unexpected[0]})"
        if unexpected
        else ""
    )
    raise ScorerError(
        f"detoxify: {named} lacks {len(missing)} of the model's {len(parameters)} weights ({shown}){other_names}: "
        f"transformers would start {'it' if len(missing) == 1 else 'them'} at random, so every score would "
        f"change from load to load; {fix}"
    )


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
        return torch.hub.load_state_dict_from_url(
            module.MODEL_URLS[model_type], map_location=device, weights_only=False
        )
    except Exception as error:
        raise ScorerUnavailableError(
            f"detoxify: downloading the {model_type!r} weights failed: {error}\n"
            + _how_to_get_detoxify_files(model_type, module.MODEL_URLS)
        ) from error


def load_detoxify(
    model_type: str,
    checkpoint: str | None,
    config_dir: str | None,
    device: str,
    origins: Mapping[str, str] | None = None,
):
    """A ``detoxify.Detoxify`` for these (already resolved) options; see ``lm_eval_bias.scorers``' docstring.

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
        check_config_dir(config_dir, origins.get("config_dir", "argument"))
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
            named, fix = (
                f"the {model_type!r} release {module.MODEL_URLS[model_type]}",
                _download_again(module, model_type),
            )
        else:
            fix = _get_checkpoint_again(model_type, module.MODEL_URLS, origins.get("checkpoint", "argument"))
            loaded = load_checkpoint_dict(checkpoint, origins.get("checkpoint", "argument"), device, fix)
            where = f"checkpoint {checkpoint!r}"
            named = f"checkpoint {checkpoint!r} (from {origins.get('checkpoint', 'argument')})"
        stored_base = loaded["config"]["arch"]["args"]["model_type"]
        # A checkpoint may already name a local folder; only a hub id needs config_dir offline.
        if config_dir is None and is_offline() and not Path(stored_base).is_dir():
            raise ScorerUnavailableError(
                f"detoxify: {where} reads its config and tokenizer from the hub id {stored_base!r}, and "
                f"downloading is off; set {DETOXIFY_CONFIG_DIR_ENV} to a folder with that model's config "
                f"and tokenizer.\n" + _how_to_get_detoxify_files(model_type, module.MODEL_URLS)
            )
        where += f" with config {config_dir or stored_base!r}"
        detox = _detoxify_from_checkpoint_dict(module, loaded, config_dir, device, where, named, fix)
        _warn_on_unexpected_labels(model_type, detox.class_names, where)
    _cap_tokenizer_length(detox)
    return detox


def _warn_on_unexpected_labels(model_type: str, labels: Sequence[str], where: str) -> None:
    # A warning, not an error: a custom checkpoint may use its own labels on purpose.
    expected = DETOXIFY_LABELS.get(model_type)
    if expected is not None and tuple(labels) != expected:
        logger.warning(
            "detoxify: %s has labels %s, not those of Detoxify's %r model %s",
            where,
            list(labels),
            model_type,
            list(expected),
        )


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

    def __init__(
        self,
        model_type: str | None = None,
        checkpoint: str | os.PathLike | None = None,
        config_dir: str | os.PathLike | None = None,
        device: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        dtype: str | None = None,
    ) -> None:
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
            logger.warning(
                "detoxify: this CPU has no native bfloat16 (AVX512-BF16 or AMX), so dtype "
                "bfloat16 is emulated and likely slower than float32"
            )
        started = time.perf_counter()
        self.detoxify = load_detoxify(
            self.model_type, self.checkpoint, self.config_dir, self.device, options["origins"]
        )
        self.labels = tuple(self.detoxify.class_names)
        logger.info(
            "detoxify: loaded %r (%s) on %s, %s, in %.1f s; labels %s",
            self.model_type,
            self.checkpoint or "downloaded weights",
            self.device,
            self.dtype,
            time.perf_counter() - started,
            ", ".join(self.labels),
        )

    def __repr__(self) -> str:
        return (
            f"DetoxifyScorer(model_type={self.model_type!r}, checkpoint={self.checkpoint!r}, "
            f"config_dir={self.config_dir!r}, device={self.device!r}, batch_size={self.batch_size}, "
            f"dtype={self.dtype!r})"
        )

    def score(self, texts: Sequence[str]) -> dict[str, list[float]]:
        """Detoxify's scores of each text (:meth:`Scorer.score`; every label of ``labels``, in [0, 1]).

        Texts go ``batch_size`` at a time, longest first.
        """
        from tqdm.auto import tqdm

        texts = as_text_list(texts, self.name)
        # NaN, not 0, until filled: a slot left unscored by a bug must never read as "not toxic".
        scores: dict[str, list[float]] = {label: [math.nan] * len(texts) for label in self.labels}
        # Longest first: similar lengths share a batch (less padding), and a batch
        # that runs out of memory does so at once, not at the end.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        batches = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        with tqdm(
            total=len(texts), desc=f"detoxify ({self.device})", unit="text", disable=len(batches) <= 1
        ) as progress:
            for number, batch in enumerate(batches):
                batch_scores = self._predict(batch, [texts[i] for i in batch], number, len(batches))
                for label, values in batch_scores.items():
                    for index, value in zip(batch, values):
                        scores[label][index] = value
                progress.update(len(batch))
        return scores

    def _predict(self, indices: list[int], batch: list[str], number: int, total: int) -> dict[str, list[float]]:
        """One call of Detoxify's predict(), checked: every label, one finite value per text."""
        context = (
            f"detoxify ({self.model_type}, {self.device}, {self.dtype}): batch {number + 1}/{total} "
            f"({len(batch)} texts, e.g. text {indices[0]} {snippet(batch[0])})"
        )
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
                raise ScorerError(
                    f"{context}: predict() returned {values!r:.120} for {label!r}, not {len(batch)} scores"
                )
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
