"""The lm-eval filter that replaces generations by their scores, and helpers for ``process_results``."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence

from lm_eval.api.filter import Filter

from lm_eval_bias import lm_eval_features
from lm_eval_bias.errors import ConfigurationError
from lm_eval_bias.scorers.base import Scorer, ScorerError
from lm_eval_bias.scorers.registry import SCORERS, get_scorer

logger = logging.getLogger("lm_eval_bias")


_TEXT_KEY = "text"
EMPTY_KEY = "empty"


class ClassifierFilter(Filter):
    """lm-eval filter that replaces every generation by its classifier scores.

    YAML keywords: ``scorers`` (names, default ``[detoxify, vader]``), ``labels`` (the
    scores the task needs: a classifier that lacks one is an error when the filter is
    checked, not after generation), and for Detoxify ``detoxify_model``,
    ``detoxify_checkpoint``, ``detoxify_config_dir``, ``detoxify_dtype``, ``device``,
    ``batch_size`` (each wins over :func:`configure` and the environment), ``keep_text``
    (default true; false where the task reads the scores alone: each dict then leaves out the
    generation's text, which the samples file logs once, in ``resps``) and ``log_scores``
    (default true; false where a document's metrics are all the samples file needs of its scores:
    each document's generations then come as a :class:`ScoredGenerations`, which the samples file
    logs as one line of counts).

    ``apply`` gets all of a task's generations at once, scores each distinct text
    once per scorer in batches, and puts, for each generation, the dict
    ``{"text": <generation>, "empty": False, <label>: <score>, ...}`` (the ``labels``
    the task names, else every scorer's; one dict per distinct text, not to be
    changed) where the generation was; an empty generation becomes
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

    def __init__(
        self,
        scorers: Iterable[str] | str = ("detoxify", "vader"),
        detoxify_model: str | None = None,
        detoxify_checkpoint: str | None = None,
        detoxify_config_dir: str | None = None,
        device: str | None = None,
        batch_size: int | None = None,
        detoxify_dtype: str | None = None,
        labels: Iterable[str] = (),
        keep_text: bool = True,
        log_scores: bool = True,
    ) -> None:
        super().__init__()
        for option, value in (("keep_text", keep_text), ("log_scores", log_scores)):
            if not isinstance(value, bool):
                raise ValueError(f"ClassifierFilter: {option} is {value!r}; write true or false")
        self.keep_text, self.log_scores = keep_text, log_scores
        self.required_labels = [labels] if isinstance(labels, str) else list(labels)
        names = [scorers] if isinstance(scorers, str) else list(scorers)
        if not names:
            raise ValueError("ClassifierFilter: scorers is empty")
        unknown = [name for name in names if name not in SCORERS]
        if unknown:
            raise ValueError(
                f"ClassifierFilter: unknown scorer(s) {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(sorted(SCORERS))}"
            )
        self.scorer_names = list(dict.fromkeys(names))
        self.options = {
            "detoxify": {
                "model_type": detoxify_model,
                "checkpoint": detoxify_checkpoint,
                "config_dir": detoxify_config_dir,
                "device": device,
                "batch_size": batch_size,
                "dtype": detoxify_dtype,
            },
            "vader": {},
        }

    def load_scorers(self) -> list[Scorer]:
        """The (cached) scorers, checked to have distinct labels."""
        loaded = [get_scorer(name, **self.options.get(name, {})) for name in self.scorer_names]
        seen = {_TEXT_KEY: "the generation itself", EMPTY_KEY: "the empty-generation flag"}
        for scorer in loaded:
            for label in scorer.labels:
                if label in seen:
                    raise ValueError(
                        f"ClassifierFilter: label {label!r} of {scorer.name} clashes with "
                        f"{seen[label]}; use one of the two scorers per filter"
                    )
                seen[label] = scorer.name
        missing = [label for label in self.required_labels if label not in seen]
        if missing:
            given = "; ".join(
                f"{scorer.name}{' (' + scorer.checkpoint + ')' if getattr(scorer, 'checkpoint', None) else ''} "
                f"gives {', '.join(scorer.labels)}"
                for scorer in loaded
            )
            raise ScorerError(
                f"ClassifierFilter: the task needs the score(s) {', '.join(missing)}, which no classifier gives "
                f"({given}). Fix: a Detoxify model whose labels include them (original, unbiased)"
            )
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
                        f"string: {item!r:.80}. It scores generated text: use it only in generate_until tasks"
                    )
                texts.append(item)
        # Repeats and models often produce the same text more than once; empty ones are not text.
        unique = list(dict.fromkeys(text for text in texts if not is_empty_text(text)))
        empty = len(texts) - sum(not is_empty_text(text) for text in texts)
        if empty:
            logger.info(
                "ClassifierFilter: %d of %d generations are empty: counted as empty, not scored", empty, len(texts)
            )
        columns: dict[str, list[float]] = {}
        for scorer in self.load_scorers() if unique else []:
            started = time.perf_counter()
            logger.info(
                "ClassifierFilter: scoring %d generations (%d distinct) with %s",
                len(texts) - empty,
                len(unique),
                scorer.name,
            )
            result = scorer.score(unique)
            for label in scorer.labels:
                if len(result.get(label, ())) != len(unique):
                    raise ScorerError(f"ClassifierFilter: {scorer.name} returned no full {label!r} column")
                columns[label] = result[label]
            logger.info("ClassifierFilter: %s took %.1f s", scorer.name, time.perf_counter() - started)
        # The samples file logs each generation's scores: those the task reads, where it names them.
        kept = {
            label: values
            for label, values in columns.items()
            if label in self.required_labels or not self.required_labels
        }
        # One dict per distinct text, shared by its generations: lm-eval holds every one until the run ends.
        by_text = {
            text: {
                **({_TEXT_KEY: text} if self.keep_text else {}),
                EMPTY_KEY: False,
                **{label: values[row] for label, values in kept.items()},
            }
            for row, text in enumerate(unique)
        }

        def scored(text: str | None) -> dict:
            if is_empty_text(text):
                return {_TEXT_KEY: text or "", EMPTY_KEY: True} if self.keep_text else {EMPTY_KEY: True}
            return by_text[text]

        several = list if self.log_scores else ScoredGenerations
        filtered = [
            scored(doc_resps) if isinstance(doc_resps, str) or doc_resps is None else several(map(scored, doc_resps))
            for doc_resps in resps
        ]
        return lm_eval_features.per_document(filtered)


class ScoredGenerations(Sequence):
    """One document's scored generations from a :class:`ClassifierFilter` with ``log_scores: false``: a
    sequence of its dicts to the task, and to a samples file one line of counts.

    lm-eval's sample writer logs a value that is no list or tuple as its ``str`` (0.4.13:
    ``utils.sanitize_list``, as in 0.5.0.dev1), so each of the document's filtered
    responses is logged as its counts, not as every generation's scores; the document's metrics hold
    what the task made of them, and ``resps`` the texts they were scored from.
    """

    __slots__ = ("_generations",)

    def __init__(self, generations: Iterable[dict]):
        self._generations = list(generations)

    def __len__(self) -> int:
        return len(self._generations)

    def __getitem__(self, index):
        return self._generations[index]

    def __eq__(self, other) -> bool:
        if isinstance(other, (ScoredGenerations, list)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return f"ScoredGenerations({self._generations!r})"

    def __str__(self) -> str:
        empty = sum(bool(generation.get(EMPTY_KEY)) for generation in self._generations)
        return f"{len(self) - empty} generations scored, {empty} empty (scores not logged: log_scores is false)"


def generation_texts(doc_resps) -> list[str]:
    """A document's generations as a list of texts.

    Parameters
    ----------
    doc_resps:
        What lm-eval holds for one document: one generation, or the list of its repeats.

    Returns
    -------
    list of str
        The generations in order; a missing one (``None`` from a server) is an empty text.
    """
    responses = [doc_resps] if isinstance(doc_resps, str) or doc_resps is None else list(doc_resps)
    return ["" if text is None else text for text in responses]


def is_empty_text(text: str | None) -> bool:
    """Whether a generation has no text (nothing, or only whitespace).

    An empty generation is never given to a classifier, which would score it like a neutral,
    non-toxic text.

    Parameters
    ----------
    text:
        The generation (``None`` from a server that returned nothing).

    Returns
    -------
    bool
        True for ``None``, the empty string, or whitespace only.
    """
    return text is None or not text.strip()


def scored_generations(results: Sequence) -> list[dict]:
    """One dict per generation from what ``process_results`` receives after :class:`ClassifierFilter`.

    Whatever the repeats, with or without ``take_first``.

    Parameters
    ----------
    results:
        The filtered responses of one document.

    Returns
    -------
    list of dict
        One per generation: ``empty``, each label's score and (unless the filter's ``keep_text`` is
        false) ``text``; no scores for an empty one (see :func:`non_empty`).

    Raises
    ------
    TypeError
        When the responses are not :class:`ClassifierFilter` output.
    """
    flat = []
    for item in results:
        for generation in [item] if isinstance(item, Mapping) else item:
            if not isinstance(generation, Mapping) or (EMPTY_KEY not in generation and _TEXT_KEY not in generation):
                raise TypeError(
                    f"expected ClassifierFilter output (dicts with {EMPTY_KEY!r} or {_TEXT_KEY!r}), got "
                    f"{generation!r:.80}; does the task's filter_list use ClassifierFilter?"
                )
            flat.append(dict(generation))
    return flat


def non_empty(generations: Sequence[Mapping]) -> list[Mapping]:
    """The scored generations among :func:`scored_generations`' output, empty ones left out.

    Parameters
    ----------
    generations:
        The output of :func:`scored_generations`.

    Returns
    -------
    list of dict
        The generations that have scores, in order.
    """
    return [generation for generation in generations if not generation.get(EMPTY_KEY, False)]
