"""The task base of every benchmark: :class:`SubgroupMetricsTask`, an lm-eval YAML task whose
per-subgroup metrics are aggregated by their names and which checks what it can before the
model is asked anything; with the helpers its YAMLs and loaders use."""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
import logging
import math
import sys

from lm_eval_bias import (
    adapters,
    aggregations,
    checks,
    companions,
    lm_eval_features,
    metric_keys,
    options,
    task_metadata,
)
from lm_eval_bias.errors import ConfigurationError, LmEvalBiasError, PreflightError
from lm_eval_bias.metric_keys import is_comparison
from lm_eval_bias.task_kinds import doc_label

logger = logging.getLogger("lm_eval_bias")

# Set while tasks are built only to count their documents (:func:`counting_documents`).
_counting_documents: contextvars.ContextVar = contextvars.ContextVar("lm_eval_bias_counting_documents", default=False)


def _task_base():
    from lm_eval.api.task import ConfigurableTask

    return ConfigurableTask


@functools.cache
def concrete_task_class(task_class: type, output_type: str | None) -> type:
    """The class a task of ``task_class`` is built as, for its YAML's ``output_type``.

    Where lm-eval's ``ConfigurableTask`` is an abstract base that dispatches by output type
    (``lm_eval_features.task_classes_by_output_type``), a YAML's ``class:`` is built as it is: the task
    is then made of ``task_class`` and lm-eval's task class of that output type, the one lm-eval builds
    for a YAML without a class, so that ours only adds to it. Elsewhere ``task_class`` itself.

    Parameters
    ----------
    task_class : type
        A subclass of :class:`SubgroupMetricsTask`.
    output_type : str or None
        The YAML's ``output_type`` (lm-eval's default where None).

    Returns
    -------
    type
    """
    by_output_type = lm_eval_features.task_classes_by_output_type()
    if by_output_type is None:
        return task_class
    from lm_eval.config.task import TaskConfig

    lm_evals = by_output_type.get(output_type or TaskConfig.output_type)
    if lm_evals is None or issubclass(task_class, lm_evals):
        return task_class  # lm-eval names an unknown output type when it builds the task
    return type(
        task_class.__name__,
        (task_class, lm_evals),
        {"__module__": task_class.__module__, "__qualname__": task_class.__qualname__, "__doc__": task_class.__doc__},
    )


class SubgroupMetricsTask(_task_base()):
    """A YAML task whose per-subgroup metrics are named, not listed, and which
    checks everything it can before the model is asked anything.

    Some metrics exist once per subgroup found in the data (one per gender
    identity, say), so the YAML cannot list them by name. One rule gives every
    metric that ``process_results`` returns its aggregation (:func:`aggregations.aggregation_for`):
    its ``metric_list`` entry; else an entry named with ``<group>``
    (``bias_score_<group>_ci_lower``), which declares that statistic of every
    group (``metric_keys.GROUP``); else its name's suffix: ``*_gap`` is a
    difference of two groups' means (per-document values ``(side, value)``), ``*_gap_ci_lower``/``*_gap_ci_upper`` its
    interval and ``*_gap_pvalue`` the p-value of the test it inverts
    (``*_gap_pvalue_bh`` with values ``(group, side, value, target group)``: the
    target group's p-value, Benjamini-Hochberg adjusted across the groups);
    ``*_range`` (values ``(group, value)``) is the largest minus the smallest
    group mean, with ``*_range_ci_lower``/``*_range_ci_upper``/``*_range_pvalue``;
    ``*_spread`` (values ``(group, value)``) the population standard deviation
    of the group means, with ``*_spread_ci_lower``/``*_spread_ci_upper``;
    ``*_ci_lower``/``*_ci_upper`` the interval of a mean
    (``stats.mean_interval``); ``*_n`` the number of documents a metric rests on
    and ``*_n_samples`` the generations behind it; anything else lm-eval's
    ``mean`` (so it gets lm-eval's standard error). Its direction is that of the
    longest declared metric name it starts with, except that gaps, ranges and
    spreads are lower-is-better (a larger disparity is worse). Use it from YAML
    with ``class: !function lm_eval_bias.harness.SubgroupMetricsTask``.

    Where the task's metadata declares the unit its documents were built from
    (``cluster_unit``), each document's cluster (``TaskIdentity.cluster_id``)
    is appended to its value of every metric whose aggregation reads it
    (``stats.CLUSTER_AWARE``: intervals and tests), and each mean with an
    interval gets ``*_design_effect`` (``stats.mean_design_effect``): the
    intervals and tests take each unit as one, and the results say what that
    cost.

    Each document holds each value once (:mod:`lm_eval_bias.companions`): the
    companions whose value is the metric's (its interval's, design effect's and
    test's, clustered where they read the cluster, and ``_n``) are left out of
    every document and derived from the metric's value before lm-eval
    aggregates (``adapters.companions_derived``). A task class may leave out
    more, entries that follow from what its documents hold, and derive them
    itself (:meth:`derived_lists`, :meth:`derived_entries`), from the values
    and what :meth:`document_labels` says of each document.

    A custom aggregation that cannot be computed on the evaluated documents
    (a gap with one side missing, a range with one group, as ``--limit`` can
    leave) reports ``"N/A"``, lm-eval's own marker, with a warning saying why,
    rather than NaN or a crash.

    Checks, in this order, each with one message naming the fix: the task's
    ``--metadata`` options (names and types) before its data is read; its data
    (by its loader); the text classifiers its filters need, loaded now rather
    than after every generation; and, once the request gate hands it the model
    (:meth:`use_model`, called by ``adapters.install_request_gate``), whether that
    backend can score it and whether its requests fit the model's context. The
    data's provenance (file, sha256, official or not, any selection) goes into
    the task's config metadata, which lm-eval copies into the results file.
    """

    #: What ``task_kinds.is_ours`` reads: this task and its subclasses are lm-eval-bias's.
    LM_EVAL_BIAS_TASK = True

    #: The ``<group>`` entries of the task's ``metric_list`` (``metric_keys.GROUP``): name ->
    #: aggregation, name -> higher_is_better (set for each task when it is built; never modified).
    _group_aggregations: dict = {}
    _group_directions: dict = {}

    def __new__(cls, config=None, **kwargs):
        return super().__new__(concrete_task_class(cls, (config or {}).get("output_type")))

    def __init__(self, config=None, **kwargs):
        # first, so that the stock CLI shows even this task's own errors as one message
        adapters.install_request_gate()
        config = dict(config or {})
        config.pop("class", None)  # lm-eval passes it on; TaskConfig has no such field
        # metric_list entries named with <group> declare a metric for every group: kept apart from
        # lm-eval, which would take them for metrics; declare_metrics applies them to each group's
        config["metric_list"], self._group_aggregations, self._group_directions = per_group_entries(config)
        if type(self).document_metrics is not SubgroupMetricsTask.document_metrics:
            config["process_results"] = scored_by_its_class(config, type(self))
        check_options(config)
        task_metadata.check_task_config(config)
        # The classifiers and the data are checked both, so that one problem does not hide the other.
        failures = []
        try:
            config["filter_list"] = prepare_classifiers(config)
        except LmEvalBiasError as error:
            failures.append(error)
        try:
            super().__init__(config=config, **kwargs)
            # read now where lm-eval reads a task's data when it first asks for a document (0.5.0.dev1):
            # after the model has loaded
            self.dataset
        except LmEvalBiasError as error:
            failures.append(error)
        if len(failures) == 1:
            raise failures[0]
        if failures:
            raise PreflightError([str(error) for error in failures])
        adapters.expect_subgroup_metrics(self.config.task)
        identity = task_metadata.identity(self.config.metadata, self.config.task)
        self._clusters = identity if identity is not None and identity.cluster_fields else None
        self._clustered, self._mean_lower_bounds = set(), set()
        self._slimmer = companions.Slimmer(self.config.task)
        self._intervals: dict = {}  # (metric, interval) -> (values, interval or error) until its other bound
        if not hasattr(self, "_aggregation_list"):
            self._aggregation_list, self._higher_is_better = declared_metrics(self)
        for name, aggregation in list(self._aggregation_list.items()):
            aggregation = aggregations.with_value_range(name, aggregation)
            self._note_clustered(name, aggregation)
            self._aggregation_list[name] = self._reported_or_na(name, aggregation)

    def download(self, dataset_kwargs=None, **kwargs) -> None:
        super().download(dataset_kwargs, **kwargs)
        self._docs_read: list | None = None  # each document as doc_iterator first read it
        provenance = getattr(self.dataset, "lm_eval_bias_data", None)
        if provenance is not None:
            self.config.metadata = {**(self.config.metadata or {}), "lm_eval_bias_data": provenance}

    def plain_text(self) -> bool:
        """Whether the task's prompts are plain text that a chat template or system instruction
        would change into another probe (YAML metadata ``plain_text: true``): WinoQueer scores
        sentences after the BOS token alone, the next-word probes continue a sentence."""
        return options.flag((self.config.metadata or {}).get("plain_text", False))

    #: The model lm-eval evaluates the task with (:meth:`use_model`); None outside a run.
    model = None
    #: The model's prefix token (BOS, else EOS) as text, where its tokenizer reads it back as
    #: that one token (``checks.prefix_token_text``), for the run being built; else None.
    prefix_text: str | None = None

    def use_model(self, lm) -> None:
        """Build and score the task's requests for ``lm`` (lm-eval's model; None: no model, after
        the run). The request gate calls it before lm-eval's ``evaluate`` builds any request.

        The log-likelihood contexts start with the model's prefix token written as text where its
        tokenizer allows (``prefix_text``): decided by the model alone, never by the documents, so
        that with several processes every process sends its shard in the same form.
        """
        self.model = lm
        self.prefix_text = None
        if lm is None or self.OUTPUT_TYPE not in ("multiple_choice", "loglikelihood"):
            return
        self.prefix_text = checks.prefix_token_text(lm)
        if self.prefix_text is None:
            logger.info(
                "%s: the model's prefix token cannot be written as text for this backend; "
                "contexts are sent as they are",
                self.config.task,
            )
        else:
            logger.info("%s: contexts start with %r, the model's prefix token", self.config.task, self.prefix_text)

    def build_all_requests(self, **kwargs):
        if self.plain_text() and (kwargs.get("apply_chat_template") or kwargs.get("system_instruction")):
            logger.info(
                "%s: plain-text prompts; --apply_chat_template and --system_instruction are not used for this task",
                self.config.task,
            )
            kwargs.update(
                apply_chat_template=False, chat_template=None, system_instruction=None, fewshot_as_multiturn=False
            )
        built = super().build_all_requests(**kwargs)
        checks.check_requests_fit(self, self.model)
        return built

    def construct_requests(self, doc, ctx, **kwargs):
        """lm-eval's requests, each log-likelihood context starting with the model's prefix token.

        A causal LM's first token is otherwise read with no start-of-text before it, and the
        backends disagree on whether to add one: lm-eval's ``hf`` and ``vllm`` send a context
        without BOS unless ``add_bos_token=True``, a completions server adds BOS where the model's
        tokenizer says so, and llama-cpp-python's server echoes wrong log-probabilities for a
        prompt without it. Written into the context, the prefix token is the same on every
        backend, as lm-eval itself conditions an empty context on it. A chat template decides
        how its prompt starts, so a templated context is sent as it is.
        """
        if (
            self.prefix_text
            and isinstance(ctx, str)
            and ctx
            and not kwargs.get("apply_chat_template")
            and not ctx.startswith(self.prefix_text)
        ):
            ctx = self.prefix_text + ctx
        return super().construct_requests(doc, ctx, **kwargs)

    def doc_iterator(self, *, rank: int = 0, limit: int | None = None, world_size: int = 1, samples=None):
        """lm-eval's ``(position, document)`` pairs for this process, as lm-eval 0.4.13 gives them,
        each document read from the dataset once in the run.

        lm-eval selects ``--samples`` by testing each document's index against the list (time the
        product of the task's documents and the shard's: hours for a shard of TANGO's 1.5 million),
        and reads every document afresh on each pass (building the requests, then scoring them under
        each filter), so that a run holds each document twice, in its requests and in its logged
        sample. Here the selection is by index and each pass gives the same document object.

        Raises
        ------
        ConfigurationError
            A ``--samples`` index outside the task's documents (lm-eval asserts it).
        """
        docs = self.eval_docs
        count = len(docs)
        if samples:
            outside = sorted({index for index in samples if not 0 <= index < count})
            if outside:
                raise ConfigurationError(
                    f"{self.config.task}: --samples names documents {', '.join(map(str, outside[:5]))}"
                    f"{' ...' if len(outside) > 5 else ''}, but the task has documents 0 to {count - 1}. Fix: "
                    f"make the --samples file for this task (lm-eval-bias shards {self.config.task} ...)"
                )
            logger.info("%s: Evaluating on %d examples", self.config.task, len(samples))
            chosen = sorted(set(samples))  # lm-eval's order: the documents', each once
        else:
            chosen = range(count if not limit else min(int(limit), count))
        if getattr(self, "_docs_read", None) is None:
            self._docs_read = [None] * count
        read = self._docs_read
        for position in range(int(rank), len(chosen), int(world_size)):
            index = chosen[position]
            doc = read[index]
            if doc is None:
                doc = read[index] = docs[index]
            yield position, doc

    def fewshot_docs(self):
        """lm-eval's few-shot pool, none for a task that takes no examples (``num_fewshot: 0``, which
        lm-eval keeps whatever ``--num_fewshot`` says): lm-eval 0.4.13 otherwise lists every test
        document for a sampler such a task never calls, a copy of each document held through the run
        (1.5 million for ``tango_disclosure_full``, in every shard's process)."""
        if self.config.num_fewshot == 0:
            return None
        return super().fewshot_docs()

    def apply_filters(self):
        """lm-eval's filters, on each request's own answers only.

        With several processes lm-eval pads the shorter shards' request lists with copies of
        the last request of their type, so that every rank runs as many, and appends those
        copies' answers to that request (lm-eval 0.4.13 ``evaluate``): its document would be
        scored on ``repeats`` answers and more, e.g. extra generations in a classifier's
        counts. One process never sends a request more than ``repeats`` times.
        """
        for instance in self.instances:
            del instance.resps[instance.repeats :]
        return super().apply_filters()

    def _reported_or_na(self, name: str, aggregation):
        from lm_eval.api.metrics import mean

        from lm_eval_bias import stats

        task = self.config.task
        if aggregation is mean:  # keep lm-eval's closed-form standard error
            return aggregation
        bound = stats.BOUND_OF.get(getattr(aggregation, "func", aggregation))
        if bound is not None:
            aggregation = self._bound_of_shared_interval(name, *bound, getattr(aggregation, "keywords", {}))

        def aggregate(values):
            try:
                return aggregation(values)
            except (ValueError, ArithmeticError) as error:
                logger.warning("%s: %s is not reported: %s", task, name, error)
                return "N/A"

        return aggregate

    def _bound_of_shared_interval(self, name: str, interval, place: int, keywords: dict):
        """The aggregation of one bound of ``interval`` (``place`` 0: lower, 1: upper): lm-eval asks
        for each bound apart, with lists of the same values, and an interval (a bootstrap) costs as much
        for one bound as for both, so the other bound's call on equal values takes the one computed."""
        key = (name.rsplit("_ci_", 1)[0], interval)
        # Held in the task's aggregations: a closure over the task would make a reference cycle that
        # keeps every Instance of the finished run until a full garbage collection.
        intervals = self._intervals

        def bound(values):
            cached = intervals.pop(key, None)
            if cached is not None and (cached[0] is values or cached[0] == values):
                found = cached[1]
            else:
                try:
                    found = interval(values, **keywords)
                except (ValueError, ArithmeticError) as error:
                    found = error
                intervals[key] = (values, found)
            if isinstance(found, Exception):
                raise found
            return found[place]

        return bound

    def document_metrics(self, doc: dict, results) -> dict:
        """One document's metrics, before the clusters and design effects are added: what the YAML's
        ``process_results`` returns. A task class that scores its documents itself (it knows what it
        sent) overrides this, and its YAML names no ``process_results`` (:func:`scored_by_its_class`).

        Parameters
        ----------
        doc : dict
            The document.
        results : list
            lm-eval's answers to its requests, in their order.

        Returns
        -------
        dict
            Metric name -> the document's value.
        """
        return super().process_results(doc, results)

    def process_results(self, doc, results):
        if self.OUTPUT_TYPE in ("loglikelihood", "multiple_choice"):
            check_finite_logliks(self.config.task, doc, results)
        metrics = self.document_metrics(doc, results)
        self.declare_metrics(metrics)
        cluster = None if self._clusters is None else self._clusters.cluster_id(doc)
        if cluster is not None:
            effects = design_effect_companions(metrics, self._mean_lower_bounds)
            metrics.update(effects)
            self.declare_metrics(effects)
        slimmed = self._slimmer.slimmed(metrics, cluster, self._clustered, self.document_labels(doc))
        if lm_eval_features.tasks_score_and_aggregate():
            # lm-eval reads a list as the document's repeats: each value here is one document's
            return {name: [value] if isinstance(value, list) else value for name, value in slimmed.items()}
        return slimmed

    def aggregation(self) -> dict:
        """Metric name -> its aggregation: the ``metric_list``'s, and each metric's that
        :meth:`declare_metrics` gave it (lm-eval 0.4.13's own ``aggregation()`` gives the same dict)."""
        return self._aggregation_list

    def higher_is_better(self) -> dict:
        """Metric name -> whether a higher value is better, as :meth:`aggregation` for directions."""
        return self._higher_is_better

    def aggregate(self, bootstrap_iters: int | None = 100000) -> tuple[dict, int]:
        """The task's results, where lm-eval has each task aggregate its own documents
        (``lm_eval_features.tasks_score_and_aggregate``; lm-eval 0.4.13 aggregates the lists it
        gathered with :meth:`aggregation` itself, and never calls this).

        What lm-eval 0.4.13 reports for the same values: each metric's list in document order (with
        several processes lm-eval merges the ranks' documents by their ids), its companions derived
        (:meth:`with_companions`, what ``adapters.companions_derived`` does on 0.4.13), aggregated by
        :meth:`aggregation`, with lm-eval 0.4.13's standard errors (:func:`aggregations.standard_error`).

        Parameters
        ----------
        bootstrap_iters : int or None
            lm-eval's ``bootstrap_iters``: 0 or None, no standard errors.

        Returns
        -------
        tuple
            ``({"<metric>,<filter>": value, "<metric>_stderr,<filter>": error}, documents)``, documents
            the longest list aggregated.
        """
        raw_metrics: dict = {}
        for scorer in self.scorers:
            for _, values in sorted(scorer.reduced_docs.items()):
                for name, value in values.items():
                    raw_metrics.setdefault((name, scorer.name), []).append(value)
        lists = self.with_companions(raw_metrics)
        aggregation_of = self.aggregation()
        results, documents = {}, 0
        for (name, pipeline), values in lists.items():
            aggregation = aggregation_of[name]
            results[f"{name},{pipeline}"] = aggregation(values)
            results[f"{name}_stderr,{pipeline}"] = aggregations.standard_error(aggregation, values, bootstrap_iters)
            documents = max(documents, len(values))
        return results, documents

    def document_labels(self, doc: dict) -> tuple | None:
        """Hook: what this task's :meth:`derived_lists` reads of a document beside its values (its group,
        say), carried by each of its values (``companions.carrier``); None, the default, for a task
        whose derived lists read the values alone.

        Parameters
        ----------
        doc : dict
            The document.

        Returns
        -------
        tuple or None
            One shared tuple for every document labelled alike (a cached one), so that a document
            costs a reference to it.
        """
        return None

    def with_companions(self, raw_metrics: dict):
        """lm-eval's ``raw_metrics`` of this task with each derived companion's list rebuilt, and the
        lists of :meth:`derived_lists`, as it aggregates them (``companions.with_companions``;
        ``adapters.companions_derived`` calls it), each declared (with several processes, rank 0 has
        not scored every metric's documents)."""
        lists = companions.with_companions(raw_metrics, self._clustered, self.derived_lists(raw_metrics))
        self.declare_metrics(name for name, _ in lists)
        return lists

    def derived_lists(self, raw_metrics: dict) -> dict:
        """Hook: the metrics this task's documents leave out beyond their companions, derived from what
        they hold. A task class that leaves some out overrides it, and :meth:`derived_entries` with it.

        Parameters
        ----------
        raw_metrics : dict
            lm-eval's ``raw_metrics`` of the task, the values as :meth:`process_results` returned them
            (``companions.carrier``).

        Returns
        -------
        dict
            ``(metric, filter)`` -> a function of whether the metric's aggregation reads clusters
            (``stats.CLUSTER_AWARE``), giving the list lm-eval would have gathered had every document
            held the metric (in any order its aggregation does not depend on); empty for a task that
            leaves out nothing more.
        """
        return {}

    @staticmethod
    def derived_entries(sample: dict, names, cluster, clustered) -> dict:
        """Hook: what one logged sample of this task leaves out beyond its companions, for the readers
        of samples files (``companions.completed_samples``): the values of :meth:`derived_lists` one
        document held.

        Parameters
        ----------
        sample : dict
            The sample, as JSON gives it.
        names : sequence of str
            The metrics the results file reports under the sample's filter that it does not list.
        cluster : int or None
            The document's cluster, None where it has none.
        clustered : callable
            A metric's name -> whether its aggregation reads each document's cluster beside its value.

        Returns
        -------
        dict
            Metric name -> the document's value, as JSON gives it, for those of ``names`` derived from the
            sample; empty for a task that leaves out nothing more.

        Raises
        ------
        companions.NotDerivable
            A sample that lacks what they are derived from.
        """
        return {}

    def declare_metrics(self, names) -> None:
        """Give each metric that the YAML does not list its aggregation and direction, by its name
        (rank 0 of a data-parallel run also for the metrics only other ranks' documents had)."""
        for name in names:
            if name not in self._aggregation_list:
                aggregation = aggregations.aggregation_for(name, self._group_aggregations)
                self._note_clustered(name, aggregation)
                self._aggregation_list[name] = self._reported_or_na(name, aggregation)
                self._higher_is_better[name] = self._declared_direction(name)

    def _note_clustered(self, name: str, aggregation) -> None:
        """Remember that ``name``'s aggregation reads each document's cluster beside its value, and
        whether it is the lower bound of a mean's interval (whose mean gets a design effect)."""
        from lm_eval_bias import stats

        function = getattr(aggregation, "func", aggregation)  # the function a value_range is bound to
        if function in stats.CLUSTER_AWARE:
            self._clustered.add(name)
        if function in (stats.ci_lower, stats.exact_lower_pct):
            self._mean_lower_bounds.add(name)

    def _declared_direction(self, name: str) -> bool:
        declared = metric_keys.declared_for(name, self._group_directions)
        if declared is not None:
            return declared
        # A disparity (gap, range, spread) is worse the larger it is, whatever its measure.
        if is_comparison(name):
            return False
        # the longest declared name that starts it: its prefixes, longest first, looked up (a
        # scan of every declared name for every new metric took 2% of a run with many of both)
        for end in range(len(name), 0, -1):
            if name[:end] in self._higher_is_better:
                return self._higher_is_better[name[:end]]
        return False


def declared_metrics(task) -> tuple[dict, dict]:
    """The aggregation and direction of each metric the task's ``metric_list`` declares, from the
    metrics lm-eval built of it (its scorers' ``metrics``), where lm-eval's task keeps no such dicts
    (0.5.0.dev1; 0.4.13's ``ConfigurableTask`` keeps them as ``_aggregation_list`` and
    ``_higher_is_better``, which the task takes as they are).

    Parameters
    ----------
    task : SubgroupMetricsTask
        The task, built by lm-eval.

    Returns
    -------
    tuple of dict
        Metric name -> aggregation, metric name -> higher_is_better.
    """
    aggregation_of, directions = {}, {}
    for scorer in task.scorers:
        for metric in scorer.metrics or ():
            aggregation_of.setdefault(metric.name, metric.aggregation)
            directions.setdefault(metric.name, metric.higher_is_better)
    return aggregation_of, directions


def scored_by_its_class(config: dict, task_class: type) -> str:
    """The ``process_results`` lm-eval is given for a task whose class scores its documents
    (``SubgroupMetricsTask.document_metrics``): the name of that method, which the results file's
    config shows. lm-eval reads the ``metric_list`` names as metric functions to look up unless a
    task has a ``process_results``, and calls a callable one only, so a name is never called.

    Raises
    ------
    ConfigurationError
        When the task's YAML names a ``process_results`` too, which would not be used.
    """
    if config.get("process_results") is not None:
        raise ConfigurationError(
            f"{config.get('task', 'this task')}: its class {task_class.__name__} scores its documents itself, so "
            "the YAML's process_results would not be used. Fix: remove process_results from the task's YAML"
        )
    return f"{task_class.__module__}.{task_class.__qualname__}.document_metrics"


def design_effect_companions(metrics: dict, mean_lower_bounds) -> dict:
    """``<metric>_design_effect`` for each mean among one document's metrics whose ``<metric>_ci_lower``
    is in ``mean_lower_bounds`` (a gap, range or spread has none): its value is the mean's, aggregated
    by ``stats.mean_design_effect``."""
    return {
        name[: -len("_ci_lower")] + "_design_effect": value
        for name, value in metrics.items()
        if name in mean_lower_bounds and name.endswith("_ci_lower")
    }


def per_group_entries(config: dict) -> tuple[list | None, dict, dict]:
    """The task's ``metric_list`` without its ``<group>`` entries (what lm-eval gets), and those
    entries' aggregations and directions by name (``metric_keys.GROUP``)."""
    from lm_eval.api.registry import get_aggregation

    entries = config.get("metric_list")
    if entries is None:
        return None, {}, {}
    plain, aggregation_of, directions = [], {}, {}
    for entry in entries:
        name = entry.get("metric") if isinstance(entry, dict) else None
        if not (isinstance(name, str) and metric_keys.GROUP in name):
            plain.append(entry)
            continue
        if "aggregation" not in entry or "higher_is_better" not in entry:
            raise ConfigurationError(
                f"{config.get('task', 'this task')}: metric_list entry {name!r} needs an aggregation and "
                "higher_is_better (an entry with <group> declares the metric of every group)"
            )
        aggregation = entry["aggregation"]
        aggregation_of[name] = get_aggregation(aggregation) if isinstance(aggregation, str) else aggregation
        directions[name] = entry["higher_is_better"]
    return plain, aggregation_of, directions


@contextlib.contextmanager
def counting_documents():
    """Tasks built inside the block are built only to count their documents
    (:func:`lm_eval_bias.shards.task_documents`): their classifiers are not loaded.

    The classifiers score generations, not documents, so the count is a run's. Loading them
    (torch and the Detoxify model: seconds and hundreds of MiB, or an error where no checkpoint
    is at hand) checks a run, and the run checks them again when it builds its tasks.
    """
    token = _counting_documents.set(True)
    try:
        yield
    finally:
        _counting_documents.reset(token)


def prepare_classifiers(config: dict) -> list | None:
    """The task's ``filter_list`` with its ``detoxify_*`` options handed to each classifier filter,
    whose classifiers are loaded now: a missing or broken checkpoint is found before hours of
    generation rather than after (lm-eval builds a filter only when it applies it). Inside
    :func:`counting_documents` they are not loaded."""
    filter_list = copy.deepcopy(config.get("filter_list"))
    filter_module = sys.modules.get("lm_eval_bias.scorers.filter")
    if filter_module is None:
        # No YAML function has imported it, so none is a classifier filter: the classifiers'
        # package is not imported for a task without one (30 ms, 3% of a short task's run).
        return filter_list
    ClassifierFilter = filter_module.ClassifierFilter
    given = None
    for pipeline in filter_list or []:
        for step in pipeline.get("filter", []):
            function = step.get("function")
            if not (isinstance(function, type) and issubclass(function, ClassifierFilter)):
                continue
            if given is None:
                parsed = options.parse(config.get("metadata") or {}, options.DETOXIFY_OPTIONS)
                given = {name: value for name, value in parsed.items() if value is not None}
            for name, value in given.items():
                step.setdefault(name, value)  # the filter's own YAML keywords win
            classifier = function(**{key: value for key, value in step.items() if key != "function"})
            if not _counting_documents.get():
                classifier.load_scorers()
    return filter_list


def check_options(config: dict) -> None:
    """A task's ``--metadata`` options, before its data is read: misspelt names (``data_fil``)
    and values of the wrong type (``{"data_file": 5}``) are errors naming the fix."""
    declared = getattr(config.get("custom_dataset"), "options", None)
    if declared is None:
        return
    task = config.get("task", "this task")
    metadata = config.get("metadata") or {}
    own = {option.name for option in declared}
    problems = options.misspelt(metadata, own)
    try:
        options.parse(metadata, declared, where="--metadata")
    except ConfigurationError as error:
        problems += str(error).splitlines()
    if problems:
        raise ConfigurationError(f"{task}: " + "; ".join(problems) + f". {task} reads: {options.listing(declared)}")


def check_finite_logliks(task: str, doc: dict, results) -> None:
    """A NaN or infinite log-likelihood is a backend fault (e.g. a server that returns no
    prompt log-probabilities); scoring it would silently count as a verdict."""
    for value in results:
        loglik = value[0] if isinstance(value, (tuple, list)) else value
        if not isinstance(loglik, (int, float)) or not math.isfinite(loglik):
            raise ConfigurationError(
                f"{task}: the model backend returned the log-likelihood {loglik!r} for document "
                f"{doc_label(doc)}; scores need finite log-probabilities of the prompt's tokens. "
                "Fix: use a backend that returns them (e.g. --model hf, or a completions server "
                "with echo and logprobs; chat-completions APIs cannot score text)"
            )


def evaluation_split(rows: list[dict], provenance: dict, what: str):
    """The ``test`` split lm-eval evaluates, from our document rows, with the data's provenance
    attached for the results file (``SubgroupMetricsTask.download`` moves it into the task's
    config metadata; ``options.takes`` adds the options that narrowed or changed the documents).

    Parameters
    ----------
    rows : list of dict
        The documents, with the same keys in the same order and JSON values (lists, not tuples;
        a column's numbers all ints or all floats), so that the ``datasets.Dataset`` made of them
        gives them back as they are.
    provenance : dict
        ``{"official": True | False | None, "files": [data.describe_file(...)]}`` (official None:
        prompts built in code, no data file).
    what : str
        The documents' name in the debug log.

    Returns
    -------
    datasets.DatasetDict
        ``{"test": Dataset}``, with the provenance as its ``lm_eval_bias_data`` attribute.
    """
    import datasets

    logger.debug("%s: %d documents", what, len(rows))
    split = datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})
    split.lm_eval_bias_data = dict(provenance)
    return split
