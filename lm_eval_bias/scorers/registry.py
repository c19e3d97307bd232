"""The scorer registry: one loaded scorer per process for each distinct set of options."""

from __future__ import annotations

from typing import Any

from lm_eval_bias.scorers.base import Scorer
from lm_eval_bias.scorers.config import (
    DEFAULT_BATCH_SIZE,
    default_device,
    forget_configured,
    resolve_detoxify_options,
)
from lm_eval_bias.scorers.detoxify_scorer import DetoxifyScorer
from lm_eval_bias.scorers.vader import VaderScorer

_scorer_cache: dict[tuple, Scorer] = {}


def _detoxify_key(options: dict[str, Any]) -> tuple:
    unknown = set(options) - {"model_type", "checkpoint", "config_dir", "device", "batch_size", "dtype"}
    if unknown:
        raise TypeError(f"detoxify: unknown option(s) {', '.join(sorted(unknown))}")
    resolved = resolve_detoxify_options(
        options.get("model_type"), options.get("checkpoint"), options.get("config_dir"), options.get("dtype")
    )
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


def reset() -> None:
    """Forget :func:`configure` defaults and every cached scorer (for tests and notebooks)."""
    forget_configured()
    _scorer_cache.clear()
