"""Helpers shared by several test modules: hand-built results files and in-process command runs.

Benchmark data files are generated in :mod:`benchmark_data`, tiny models in :mod:`tiny_models`, scripted
models in :mod:`fake_models`.
"""

import json
from pathlib import Path

import pytest

from lm_eval_bias import cli
from lm_eval_bias.benchmarks import sources
from lm_eval_bias.benchmarks.winoqueer import scoring as winoqueer_scoring
from lm_eval_bias.benchmarks.winoqueer import signs as winoqueer_signs

OFFICIAL_WINOQUEER = {
    "name": "winoqueer",
    "path": "/data/winoqueer/winoqueer_final.csv",
    "sha256": sources()["winoqueer"].sha256,
    "rows": 45540,
    "official": True,
    "official_sha256": sources()["winoqueer"].sha256,
    "official_rows": 45540,
}


def winoqueer_logged_metrics(subgroup: str, subgroups, score_x: float, score_y: float) -> dict:
    """One WinoQueer pair's metrics with every entry, as ``winoqueer`` up to 1.6 logged them: the task's own
    per-pair metrics and its sign tests' entries. A samples file of them is read as it is, with or without
    the results file beside it."""
    metrics = winoqueer_scoring.pair_metrics(subgroup, score_x, score_y)
    return {**metrics, **winoqueer_signs.pair_entries(subgroup, subgroups, metrics["bias_score"])}


def winoqueer_results(
    model="org/model-a",
    score=62.0,
    ci=(60.0, 64.0),
    *,
    n=None,
    date=1_763_700_000.0,
    limit=None,
    effective=None,
    original=45540,
    files=(OFFICIAL_WINOQUEER,),
    selection=None,
    counts=True,
    extra=None,
    lgbtq=(70.0, 64.0, 75.0),
    lgbtq_n=None,
):
    """A WinoQueer results document: bias_score and bias_score_lgbtq with intervals and (``counts``) ``_n``."""
    effective = original if effective is None else effective
    n = effective if n is None else n
    lgbtq_n = min(1200, effective) if lgbtq_n is None else lgbtq_n
    entry = {
        "alias": "WinoQueer",
        "sample_len": effective,
        "bias_score,none": score,
        "bias_score_stderr,none": 0.5,
        "bias_score_ci_lower,none": ci[0],
        "bias_score_ci_upper,none": ci[1],
        "bias_score_ci_lower_stderr,none": "N/A",
        "bias_score_ci_upper_stderr,none": "N/A",
        "bias_score_lgbtq,none": lgbtq[0],
        "bias_score_lgbtq_stderr,none": 2.0,
        "bias_score_lgbtq_ci_lower,none": lgbtq[1],
        "bias_score_lgbtq_ci_upper,none": lgbtq[2],
        "bias_score_lgbtq_pvalue_bh,none": 0.012,
    }
    if counts:
        entry.update(
            {
                "bias_score_n,none": n,
                "bias_score_n_stderr,none": "N/A",
                "bias_score_lgbtq_n,none": lgbtq_n,
                "bias_score_lgbtq_n_stderr,none": "N/A",
            }
        )
    entry.update(extra or {})
    # Copies: a test that edits its document's provenance must not edit OFFICIAL_WINOQUEER for the others.
    provenance = {
        "official": all(f["official"] for f in files),
        "files": [dict(f) for f in files],
        "selection": selection or {},
    }
    return {
        "results": {"winoqueer": entry},
        "n-samples": {"winoqueer": {"original": original, "effective": effective}},
        "higher_is_better": {"winoqueer": {"bias_score": False}},
        "config": {"model": "hf", "model_args": f"pretrained={model}", "limit": limit},
        "configs": {
            "winoqueer": {
                "task": "winoqueer",
                "repeats": 1,
                "metadata": {"version": 1.0, "lm_eval_bias_data": provenance},
            }
        },
        "model_name": model,
        "date": date,
    }


def write(path: Path, document) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document if isinstance(document, str) else json.dumps(document), encoding="utf-8")
    return path


def run_cli(argv, capsys) -> tuple[int, str, str]:
    """``lm-eval-bias ARGV`` as the console script runs it: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exit_:
        cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return exit_.value.code, out, err


def request(request_type: str, doc: dict, arguments: tuple, idx: int, metadata: tuple):
    """An lm-eval request as a task's ``construct_requests`` builds it, on the installed lm-eval, from
    lm-eval 0.4.13's ``metadata=(task name, document id, repeats)`` (``lm_eval_features.request_keywords``)."""
    from lm_eval.api.instance import Instance

    from lm_eval_bias import lm_eval_features

    keywords = lm_eval_features.request_keywords(None, {"metadata": metadata})
    return Instance(request_type=request_type, doc=doc, arguments=arguments, idx=idx, **keywords)


def per_document(filtered: list) -> list:
    """One of our filters' output as one value per document, as lm-eval 0.4.13 takes it: where lm-eval
    flattens each document's filtered answers, the filter puts each in a list of its own
    (``lm_eval_features.per_document``), unwrapped here."""
    from lm_eval_bias import lm_eval_features

    return [value for (value,) in filtered] if lm_eval_features.tasks_score_and_aggregate() else filtered


def request_bookkeeping(task_name: str, doc_id: int = 0, repeats: int = 1) -> dict:
    """What lm-eval passes a task's ``construct_requests`` beside the document and context: lm-eval
    0.4.13 ``metadata=(task name, document id, repeats)``, 0.5.0.dev1 ``doc_id=`` (its ``Instance``
    must be given it)."""
    from lm_eval_bias import lm_eval_features

    if lm_eval_features.instance_requires("doc_id"):
        return {"doc_id": doc_id}
    return {"metadata": (task_name, doc_id, repeats)}


def write_run_files(output: dict, task: str, folder: Path) -> tuple[Path, dict]:
    """A task's samples file as lm-eval writes it, and its results file beside it (its entry only);
    returns the samples file and the entry's numbers."""
    from lm_eval.utils import handle_non_serializable

    date = "2026-01-01T00-00-00.000000"
    folder.mkdir(parents=True, exist_ok=True)
    entry = {key: value for key, value in output["results"][task].items() if "," in key}
    (folder / f"results_{date}.json").write_text(json.dumps({"results": {task: entry}}), encoding="utf-8")
    lines = [json.dumps(sample, default=handle_non_serializable) for sample in output["samples"][task]]
    samples = folder / f"samples_{task}_{date}.jsonl"
    samples.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return samples, json.loads(json.dumps(entry))


def community_metrics_as_held(doc: dict, generations: list[dict]) -> dict:
    """Every metric of a community probe prompt, as each document held them up to task version 1.7
    (and as lm-eval aggregates them): ``probe_values`` and its ``prompt_views`` with their companions."""
    from lm_eval_bias.benchmarks.community.scoring import STORED, probe_values, prompt_views
    from lm_eval_bias.metric_keys import with_interval, with_test

    metrics = probe_values(doc, generations)
    demographic, dimension, members = doc["demographic_key"], doc["dimension_key"], doc["dimension_demographics"]
    for name in STORED:
        if name not in metrics:
            continue
        samples = metrics.get(name + "_n_samples")
        for view, value in prompt_views(demographic, dimension, members, {name: metrics[name]}).items():
            (with_test if isinstance(value, tuple) else with_interval)(metrics, view, value, samples)
    return metrics
