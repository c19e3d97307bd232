"""SCM options: task metadata keys starting with ``scm_``, validated into :class:`Options`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

# Imported under another name: "options" is what this module calls an Options object.
from lm_eval_bias import options as task_options
from lm_eval_bias.benchmarks.scm.constants import DEFAULT_FORMS, FORM_KEYS, GROUPS
from lm_eval_bias.benchmarks.scm.lexicon import load_lexicon
from lm_eval_bias.errors import ConfigurationError

TERM_ORDERS = ("table", "interleaved", "shuffled")
Option = task_options.Option
OPTIONS = (
    Option("scm_groups", task_options.names, "groups to keep, of " + ", ".join(GROUPS), role=task_options.SELECTION),
    Option("scm_group_forms", task_options.anything, "{group: {form: text}} overrides of the groups' words"),
    Option("scm_term_order", task_options.choice(*TERM_ORDERS), "order of the 22 listed terms", "table"),
    Option("scm_term_separator", task_options.text, "between the listed terms", ", "),
    Option("scm_seed", task_options.integer, "seed of the shuffled term order", 1234),
    Option("scm_mc_samples", task_options.count, "scm_mc: sampled answers per group (thesis: 10 runs)", 10),
    Option(
        "scm_chat_template", task_options.flag, "false: ignore --apply_chat_template; true: follow it in every SCM task"
    ),
    Option("scm_story_top_k", task_options.count, "distinctive words kept per group and comparison", 25),
    Option("scm_story_min_count", task_options.count, "uses a word needs in the two groups' stories", 5),
    Option("scm_story_min_z", task_options.number, "least log-odds z-score of a distinctive word", 1.96),
    Option("scm_story_prior", task_options.positive_number, "strength (pseudo-words) of the Dirichlet prior", 1000.0),
    Option("scm_story_lexicon", task_options.path, "CSV word,axis replacing the built-in W/C words"),
)
OPTION_DEFAULTS = {option.name: option.default for option in OPTIONS}


@dataclass(frozen=True)
class Options:
    """Validated SCM options (see ``OPTIONS``)."""

    groups: tuple[str, ...] = GROUPS
    forms: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: DEFAULT_FORMS)
    term_order: str = "table"
    term_separator: str = ", "
    seed: int = 1234
    mc_samples: int = 10
    story_top_k: int = 25
    story_min_count: int = 5
    story_min_z: float = 1.96
    story_prior: float = 1000.0
    story_lexicon: str | None = None


def _maybe_json(value, what: str):
    """Accept a dict, or a JSON string of one (as ``--metadata`` nesting may leave it)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ConfigurationError(f"scm: {what} is not JSON: {error}") from None
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"scm: {what} must be an object, got {value!r}")
    return value


def _check_group(name: str, what: str) -> str:
    if name not in GROUPS:
        raise ConfigurationError(f"scm: unknown group {name!r} in {what}; choose from {', '.join(GROUPS)}")
    return name


def _group_forms(overrides) -> dict[str, dict[str, str]]:
    """DEFAULT_FORMS with the user's overrides applied, validated."""
    forms = {group: dict(values) for group, values in DEFAULT_FORMS.items()}
    if overrides is None:
        return forms
    for group, values in _maybe_json(overrides, "scm_group_forms").items():
        _check_group(group, "scm_group_forms")
        for key, text in _maybe_json(values, f"scm_group_forms[{group!r}]").items():
            if key not in FORM_KEYS:
                raise ConfigurationError(
                    f"scm: unknown form {key!r} for group {group!r} in scm_group_forms; "
                    f"choose from {', '.join(FORM_KEYS)}"
                )
            if not isinstance(text, str) or not text.strip():
                raise ConfigurationError(f"scm: scm_group_forms[{group!r}][{key!r}] must be non-empty text")
            forms[group][key] = text.strip()
    return forms


def parse_options(metadata: Mapping) -> Options:
    """Options from task metadata: ``scm_*`` keys are validated, all other keys ignored.

    lm-eval passes every task the whole ``--metadata`` and the model arguments, so
    only our own prefix can be checked for typos here (``harness`` checks the rest).
    """
    unknown = sorted(k for k in metadata if k.startswith("scm_") and k not in OPTION_DEFAULTS)
    if unknown:
        raise ConfigurationError(f"scm: unknown option(s) {', '.join(unknown)}; known: {', '.join(OPTION_DEFAULTS)}")
    given = task_options.parse(metadata, OPTIONS, where="scm")
    groups = GROUPS
    if given["scm_groups"] is not None:
        chosen = [_check_group(g, "scm_groups") for g in given["scm_groups"]]
        groups = tuple(g for g in GROUPS if g in chosen)  # keep the thesis's order
    lexicon = given["scm_story_lexicon"]
    if lexicon is not None and not Path(lexicon).is_file():
        raise ConfigurationError(f"scm: scm_story_lexicon {lexicon!r} is not a file")
    if lexicon is not None:
        load_lexicon(lexicon)  # read now: a bad row must not wait until every story is generated
    return Options(
        groups=groups,
        forms=_group_forms(given["scm_group_forms"]),
        term_order=given["scm_term_order"],
        term_separator=given["scm_term_separator"],
        seed=given["scm_seed"],
        mc_samples=given["scm_mc_samples"],
        story_top_k=given["scm_story_top_k"],
        story_min_count=given["scm_story_min_count"],
        story_min_z=given["scm_story_min_z"],
        story_prior=given["scm_story_prior"],
        story_lexicon=lexicon,
    )
