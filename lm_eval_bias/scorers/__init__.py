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

The code is split by concern: ``base`` (the :class:`Scorer` interface and its errors),
``config`` (option resolution and the device), ``vader`` and ``detoxify_scorer`` (the two
classifiers), ``detoxify_files`` (checks of user-given Detoxify files), ``registry`` (one loaded
scorer per set of options) and ``filter``
(:class:`ClassifierFilter` and the helpers for ``process_results``). Every name is available
here, under ``lm_eval_bias.scorers``, which is the path task YAMLs use.
"""

from lm_eval_bias.scorers.base import Scorer, ScorerError, ScorerUnavailableError
from lm_eval_bias.scorers.config import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_DETOXIFY_DTYPE,
    DEFAULT_DETOXIFY_MODEL,
    DETOXIFY_CHECKPOINT_ENV,
    DETOXIFY_CONFIG_DIR_ENV,
    DETOXIFY_DTYPE_ENV,
    DETOXIFY_DTYPES,
    DETOXIFY_MODEL_ENV,
    configure,
    default_device,
    resolve_detoxify_options,
)
from lm_eval_bias.scorers.detoxify_scorer import (
    DETOXIFY_BASE_MODELS,
    DETOXIFY_INSTALL,
    DETOXIFY_LABELS,
    DetoxifyScorer,
    load_detoxify,
)
from lm_eval_bias.scorers.filter import (
    EMPTY_KEY,
    ClassifierFilter,
    generation_texts,
    is_empty_text,
    non_empty,
    scored_generations,
)
from lm_eval_bias.scorers.registry import SCORERS, get_scorer, reset
from lm_eval_bias.scorers.vader import VADER_INSTALL, VaderScorer
