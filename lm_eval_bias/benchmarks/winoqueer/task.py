"""WinoQueer's lm-eval task (the paper's Eq. 2, :class:`WinoQueerTask`) and the hooks its YAML names.

Each pair's document carries its scored spans (``plan``, from :mod:`.loader`); the task sends the
requests of :func:`.scoring.pair_requests` in one of two forms, decided by the model alone (its
prefix token written as text, ``prefix_text``, which ``SubgroupMetricsTask.use_model`` sets), and
tells the scorer which form it sent.

A sentence split at two different words (``Straight people are sinful.`` after ``Straight``
against ``LGBTQ people are sinful.``, after ``Straight people`` against ``Lesbians are
sinful.``) gives two requests whose tokens agree but for the last. lm-eval 0.4.13's ``hf``
backend runs such requests as one forward pass (its ``logits_cache``) and reads the shorter
continuation at the wrong positions; our requests are therefore scored in rounds, one
continuation length per group (``adapters.logits_cache_rounds``), so each is read from its own
forward pass. The log says which request form a run used.
"""

from __future__ import annotations

from collections.abc import Sequence

from lm_eval.api.instance import Instance

from lm_eval_bias import lm_eval_features
from lm_eval_bias.benchmarks.winoqueer import (
    loader,  # noqa: F401 - declares the options of the YAML's custom_dataset (benchmarks.import_all)
    scoring,
    signs,
)
from lm_eval_bias.benchmarks.winoqueer.record import SUBGROUPS
from lm_eval_bias.harness import SubgroupMetricsTask


def doc_to_text(doc: dict) -> str:
    """No prompt: the requests carry the sentences (``scoring.pair_requests``). A function, not ``""``
    in the YAML, because lm-eval renders a string with Jinja anew for every document (seconds for the
    official file's 45,540 pairs)."""
    return ""


def doc_to_choice(doc: dict) -> list[str]:
    """The sentence prefixes of the empty-context form, ``sent_x``'s then ``sent_y``'s (what
    lm-eval shows as the document's choices)."""
    return [continuation for _, continuation in scoring.pair_requests(doc["sent_x"], doc["sent_y"], doc["plan"])]


def subgroups_in(labels: Sequence[str]) -> tuple[str, ...]:
    """The subgroups among a dataset's pair ``labels`` (its ``subgroup`` column), in the authors' order."""
    present = set(labels)
    return tuple(name for name in SUBGROUPS if name in present)


class WinoQueerTask(SubgroupMetricsTask):
    """``winoqueer``: sends ``scoring.pair_requests`` for each pair, one request per sentence where
    the model's tokenizer allows it (``prefix_text``), and scores the answers as that form. Its
    documents leave out the sign tests' entries, which :mod:`.signs` derives from each pair's outcome."""

    #: The subgroups of the task's data, each of which gets every pair's sign for the
    #: Benjamini-Hochberg adjustment (set when the data is read).
    subgroups: tuple[str, ...] = ()

    derived_entries = staticmethod(signs.derived_entries)

    def download(self, dataset_kwargs=None, **kwargs) -> None:
        super().download(dataset_kwargs, **kwargs)
        self.subgroups = subgroups_in(self.dataset["test"]["subgroup"])

    def derived_lists(self, raw_metrics: dict) -> dict:
        """The sign tests' lists (``signs.derived_lists``), a ``_pvalue_bh`` for every subgroup of the data."""
        return signs.derived_lists(raw_metrics, self.subgroups)

    def fewshot_context(self, doc, num_fewshot, **kwargs) -> str:
        """No prompt (zero-shot, no description, plain text): the requests carry the sentences.
        lm-eval's own would render each pair's choices into a context that is never sent."""
        return ""

    def one_request_per_sentence(self, doc: dict) -> bool:
        """Whether this pair is sent (and so scored) as one request per sentence, for this run's model."""
        return scoring.one_request_per_sentence(doc["sent_x"], doc["sent_y"], doc["plan"], self.prefix_text)

    def construct_requests(self, doc, ctx, **kwargs):
        kwargs.pop("apply_chat_template", None)  # plain text (SubgroupMetricsTask.plain_text)
        kwargs.pop("chat_template", None)
        requests = scoring.pair_requests(doc["sent_x"], doc["sent_y"], doc["plan"], self.prefix_text)
        kwargs = lm_eval_features.request_keywords(self, kwargs)
        return [
            Instance(request_type="loglikelihood", doc=doc, arguments=arguments, idx=index, **kwargs)
            for index, arguments in enumerate(requests)
        ]

    def document_metrics(self, doc: dict, results: Sequence) -> dict:
        """The pair's metrics (``scoring.pair_metrics``) from the answers to the requests it sent."""
        logliks = [loglik for loglik, _ in results]
        score_x, score_y = scoring.pair_scores(doc["plan"], logliks, self.one_request_per_sentence(doc))
        return scoring.pair_metrics(doc["subgroup"], score_x, score_y)
