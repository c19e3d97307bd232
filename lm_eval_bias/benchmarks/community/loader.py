"""lm-eval's ``custom_dataset`` loaders of the community tasks and their options."""

from __future__ import annotations

import logging

from lm_eval_bias import data, options
from lm_eval_bias.benchmarks.community.paper import PROMPT_SETS
from lm_eval_bias.benchmarks.community.prompts import counts, paper_prompts, select
from lm_eval_bias.benchmarks.community.user_probes import (
    example_probe_file,
    read_user_probes,
    realise_user_prompts,
)

logger = logging.getLogger("lm_eval_bias")


def _dataset(rows: list[dict], what: str, provenance: dict):
    from lm_eval_bias.harness import evaluation_split

    logger.info(
        "%s: %d prompts (%s per template; %s per dimension)",
        what,
        len(rows),
        counts(rows, "template_id"),
        counts(rows, "dimension"),
    )
    return evaluation_split(rows, provenance, what)


PROMPT_SET = options.Option(
    "prompt_set", options.choice(*PROMPT_SETS), "paper (266 prompts, default) or grammatical (310)", "paper"
)
PROBE_DIMENSIONS = options.Option(
    "probe_dimensions", options.names, "dimensions to keep, e.g. gender,class", role=options.SELECTION
)
PROBE_DEMOGRAPHICS = options.Option("probe_demographics", options.names, "demographics to keep", role=options.SELECTION)
PROBE_TEMPLATES = options.Option(
    "probe_templates", options.names, "template ids to keep, e.g. T1,T6", role=options.SELECTION
)
SELECTION = (PROBE_DIMENSIONS, PROBE_DEMOGRAPHICS, PROBE_TEMPLATES)
PROBE_FILE = options.Option(
    "probe_file", options.path, "your probes: YAML/JSON with templates and keywords", role=options.SOURCE
)
TEMPLATES_FILE = options.Option(
    "templates_file", options.path, "your templates: CSV, YAML, JSON or TXT", role=options.SOURCE
)
KEYWORDS_FILE = options.Option("keywords_file", options.path, "your keywords: CSV, YAML or JSON", role=options.SOURCE)


@options.takes(PROMPT_SET, *SELECTION, *options.DETOXIFY_OPTIONS)
def load_probes(prompt_set, probe_dimensions, probe_demographics, probe_templates, metadata, **classifier):
    """lm-eval ``custom_dataset`` hook for ``community_probes``: the paper's probes.

    ``prompt_set``: ``paper`` (266 prompts, default) or ``grammatical`` (310).
    ``probe_dimensions``, ``probe_demographics``, ``probe_templates``: optional
    subsets (comma-separated). The task passes the ``detoxify_*`` options to its
    classifier filter.
    """
    rows = select(paper_prompts(prompt_set), probe_dimensions, probe_demographics, probe_templates)
    return _dataset(rows, f"community_probes ({prompt_set})", {"official": None, "files": []})


@options.takes(PROBE_FILE, TEMPLATES_FILE, KEYWORDS_FILE, *SELECTION, *options.DETOXIFY_OPTIONS)
def load_user_probes(
    probe_file,
    templates_file,
    keywords_file,
    probe_dimensions,
    probe_demographics,
    probe_templates,
    metadata,
    **classifier,
):
    """lm-eval ``custom_dataset`` hook for user-defined probes.

    The probes come from ``probe_file`` (YAML/JSON with ``templates`` and
    ``keywords``), or from ``templates_file`` + ``keywords_file`` (CSV, YAML or
    JSON); a relative path is looked up in the working directory, then beside
    the task YAML (``config_source``, which lm-eval sets). Without any, the
    shipped example runs, with a warning. Subsets and Detoxify options as in
    :func:`load_probes`.
    """
    if not (probe_file or templates_file or keywords_file):
        probe_file = example_probe_file()
        logger.warning(
            "community_probes_custom: no probe_file given, running the example %s "
            '(--metadata \'{"probe_file": "my_probes.yaml"}\' runs yours)',
            probe_file,
        )
    templates, keywords, paths = read_user_probes(
        probe_file, templates_file, keywords_file, metadata.get("config_source")
    )
    source = " + ".join(str(p) for p in paths)
    rows = realise_user_prompts(templates, keywords, source)
    files = [
        {"name": "user probes", "path": str(path), "sha256": data.sha256_of(path), "official": None} for path in paths
    ]
    return _dataset(
        select(rows, probe_dimensions, probe_demographics, probe_templates),
        f"user probes {source}",
        {"official": None, "files": files},
    )
