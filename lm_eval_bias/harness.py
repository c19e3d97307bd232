"""Small adapters between our benchmarks and lm-eval's run-time behaviour."""

from __future__ import annotations

import logging

_SUBGROUP_TASKS: set[str] = set()
_COUNT_WARNING = "Metrics were not scored on the same number of documents"


class _SubgroupCountFilter(logging.Filter):
    """Drop lm-eval's warning that metrics have different document counts, for our tasks.

    Per-subgroup metrics (``bias_score_<subgroup>``) are scored on that
    subgroup's documents only, by design, so the warning would fire on every run.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (
            _COUNT_WARNING in message
            and any(message.startswith(f"[{task}]") for task in _SUBGROUP_TASKS)
        )


_FILTER = _SubgroupCountFilter()


def expect_subgroup_metrics(task_name: str) -> None:
    """Declare that ``task_name`` reports metrics on subsets of its documents."""
    _SUBGROUP_TASKS.add(task_name)
    logger = logging.getLogger("lm_eval.evaluator_utils")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
