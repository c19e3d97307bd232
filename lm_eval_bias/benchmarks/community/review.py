"""Review: print the realised prompts as CSV (``python -m lm_eval_bias.benchmarks.community``)."""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence

from lm_eval_bias.benchmarks.community.paper import PROMPT_SETS
from lm_eval_bias.benchmarks.community.prompts import paper_prompts
from lm_eval_bias.benchmarks.community.user_probes import (
    read_user_probes,
    realise_user_prompts,
)

REVIEW_COLUMNS = (
    "template_id",
    "template",
    "keyword",
    "demographic",
    "dimension",
    "form",
    "number",
    "article_rule",
    "agreement_rule",
    "prompt",
)


def write_review_csv(rows: Sequence[dict], stream) -> None:
    writer = csv.DictWriter(stream, fieldnames=REVIEW_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m lm_eval_bias.benchmarks.community [--prompt-set S | --probe-file F]``: prompts as CSV."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m lm_eval_bias.benchmarks.community",
        description="Print the realised community probes as CSV, for review.",
    )
    parser.add_argument("--prompt-set", default="paper", choices=sorted(PROMPT_SETS))
    parser.add_argument("--probe-file", help="a user probe file (YAML/JSON) instead of the paper's probes")
    args = parser.parse_args(argv)
    if args.probe_file:
        templates, keywords, paths = read_user_probes(args.probe_file)
        rows = realise_user_prompts(templates, keywords, str(paths[0]))
    else:
        rows = paper_prompts(args.prompt_set)
    write_review_csv(rows, sys.stdout)
