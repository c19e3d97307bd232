"""Realising a probe set: every (template, keyword) pair a template accepts, as prompt rows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lm_eval_bias import data
from lm_eval_bias.benchmarks.community.grammar import realise
from lm_eval_bias.benchmarks.community.paper import paper_keywords, paper_templates
from lm_eval_bias.benchmarks.community.probes import Keyword, Template
from lm_eval_bias.metric_keys import slug


def accepts(template: Template, keyword: Keyword) -> bool:
    return template.forms is None or keyword.grammatical_form in template.forms


def _ordered_demographics(keywords: Sequence[Keyword]) -> dict[str, list[str]]:
    """dimension -> its demographics, in order of first appearance."""
    order: dict[str, list[str]] = {}
    for keyword in keywords:
        demographics = order.setdefault(keyword.dimension, [])
        if keyword.demographic not in demographics:
            demographics.append(keyword.demographic)
    return order


def realise_prompts(templates: Sequence[Template], keywords: Sequence[Keyword]) -> list[dict]:
    """Every accepted (template, keyword) pair as a prompt row, in an order that
    lets ``--limit`` see every demographic early.

    Rows are ordered by template, then by each keyword's rank within its
    demographic, then by demographic, so the first prompts of a run cover
    all demographics (``--limit 15`` gives one "I am ..." prompt each).
    Each row holds the template (id and text), keyword, demographic,
    dimension, form, number, the rules applied, the metric keys of the
    demographic and dimension, and the demographics its dimension compares.
    """
    demographics_of = _ordered_demographics(keywords)
    demographic_rank = {d: i for ds in demographics_of.values() for i, d in enumerate(ds)}
    dimension_rank = {dimension: i for i, dimension in enumerate(demographics_of)}
    rows = []
    for template_rank, template in enumerate(templates):
        seen_in_demographic: dict[str, int] = {}
        for keyword in keywords:
            if not accepts(template, keyword):
                continue
            rank = seen_in_demographic.get(keyword.demographic, 0)
            seen_in_demographic[keyword.demographic] = rank + 1
            realised = realise(template, keyword)
            rows.append(
                (
                    (template_rank, rank, dimension_rank[keyword.dimension], demographic_rank[keyword.demographic]),
                    {
                        "prompt": realised["prompt"],
                        "template_id": template.id,
                        "template": template.text,
                        "keyword": keyword.keyword,
                        "demographic": keyword.demographic,
                        "dimension": keyword.dimension,
                        "form": keyword.grammatical_form or "",
                        "number": keyword.grammatical_number or "",
                        "article_rule": realised["article_rule"],
                        "agreement_rule": realised["agreement_rule"],
                        "demographic_key": slug(keyword.demographic),
                        "dimension_key": slug(keyword.dimension),
                        "dimension_demographics": [slug(d) for d in demographics_of[keyword.dimension]],
                    },
                )
            )
    rows.sort(key=lambda pair: pair[0])
    return [row for _, row in rows]


def paper_prompts(prompt_set: str = "paper") -> list[dict]:
    """The paper's probes realised with our rules (``prompt_set``: see ``PROMPT_SETS``)."""
    return realise_prompts(paper_templates(prompt_set), paper_keywords())


def _names(value) -> list[str] | None:
    if value is None or value == "":
        return None
    names = value.split(",") if isinstance(value, str) else list(value)
    return [str(name).strip() for name in names if str(name).strip()]


def select(rows: list[dict], dimensions=None, demographics=None, template_ids=None) -> list[dict]:
    """Rows of some dimensions, demographics and templates only (comma-separated names or lists).

    Names match case-insensitively by their metric key ("sexual orientation" or
    "sexual_orientation"); an unknown name is an error listing the known ones.
    A dimension left with fewer demographics compares only those.
    """
    chosen_rows = rows
    for field, key, wanted in (
        ("dimension", "dimension_key", dimensions),
        ("demographic", "demographic_key", demographics),
        ("template", "template_id", template_ids),
    ):
        names = _names(wanted)
        if names is None:
            continue
        known = list(dict.fromkeys(row[key] for row in rows))
        keys = [slug(name) if key != "template_id" else name.strip() for name in names]
        unknown = [name for name, k in zip(names, keys) if k not in known]
        if unknown:
            raise data.DataError(
                f"community: unknown {field}(s) {', '.join(map(repr, unknown))}; choose from {', '.join(known)}"
            )
        chosen_rows = [row for row in chosen_rows if row[key] in keys]
    if not chosen_rows:
        raise data.DataError("community: the selection leaves no prompts")
    if chosen_rows is not rows:
        present: dict[str, list[str]] = {}
        for row in chosen_rows:
            present.setdefault(row["dimension_key"], [])
            if row["demographic_key"] not in present[row["dimension_key"]]:
                present[row["dimension_key"]].append(row["demographic_key"])
        chosen_rows = [
            {
                **row,
                "dimension_demographics": [
                    d for d in row["dimension_demographics"] if d in present[row["dimension_key"]]
                ],
            }
            for row in chosen_rows
        ]
    return chosen_rows


def counts(rows: Iterable[dict], field: str) -> dict[str, int]:
    """Number of prompts per value of ``field`` (e.g. ``template_id``, ``dimension``)."""
    result: dict[str, int] = {}
    for row in rows:
        result[row[field]] = result.get(row[field], 0) + 1
    return result
