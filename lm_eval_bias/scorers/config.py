"""Detoxify options, resolved in the order explicit > :func:`configure` > environment > default,
and the device a classifier runs on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lm_eval_bias.scorers.base import ScorerError

DETOXIFY_MODEL_ENV = "LM_EVAL_BIAS_DETOXIFY_MODEL"
DETOXIFY_CHECKPOINT_ENV = "LM_EVAL_BIAS_DETOXIFY_CHECKPOINT"
DETOXIFY_CONFIG_DIR_ENV = "LM_EVAL_BIAS_DETOXIFY_CONFIG_DIR"
DETOXIFY_DTYPE_ENV = "LM_EVAL_BIAS_DETOXIFY_DTYPE"
DEFAULT_DETOXIFY_MODEL = "original"
DEFAULT_BATCH_SIZE = 64
# float32 is Detoxify's own predict(); bfloat16 is our opt-in autocast path.
DETOXIFY_DTYPES = ("float32", "bfloat16")
DEFAULT_DETOXIFY_DTYPE = "float32"

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


def forget_configured() -> None:
    """Forget the defaults :func:`configure` set."""
    _configured.clear()


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


def resolve_detoxify_options(
    model_type: str | None = None,
    checkpoint: str | os.PathLike | None = None,
    config_dir: str | os.PathLike | None = None,
    dtype: str | None = None,
) -> dict[str, Any]:
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
        raise ScorerError(
            f"detoxify: dtype {chosen_dtype!r} (from {dtype_origin}) is not one of "
            f"{', '.join(DETOXIFY_DTYPES)}; float32 gives Detoxify's own scores"
        )
    return {
        "model_type": model or DEFAULT_DETOXIFY_MODEL,
        "checkpoint": str(Path(ckpt).expanduser().resolve()) if ckpt else None,
        "config_dir": str(Path(cfg).expanduser().resolve()) if cfg else None,
        "dtype": chosen_dtype,
        "origins": {
            "model_type": model_origin,
            "checkpoint": ckpt_origin,
            "config_dir": cfg_origin,
            "dtype": dtype_origin,
        },
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
