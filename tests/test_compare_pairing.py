"""Two runs' documents paired by what defines a document, never by position; and a samples file whose
metric values no task writes refused with exit 2, naming the file, the line, the metric and the value.

The runs are written as in ``test_compare``: invented documents scored by the tasks' own per-document
functions, each results file recomputed from its samples file.
"""

import copy
import json
import math
from pathlib import Path

import pytest

from helpers import run_cli, winoqueer_logged_metrics
from lm_eval_bias.report.compare import compare_runs
from lm_eval_bias.report.compare_inputs import check_sample_values, pair_documents
from lm_eval_bias.report.values import ResultsError
from test_compare import disclosure_document, doc_hash, logged, winoqueer_samples, write_run


def selected(samples: list[dict], subgroups: list[str]) -> list[dict]:
    """The samples a run of only ``subgroups`` logs: the same documents, scored with that run's subgroups."""
    kept = []
    for sample in samples:
        doc = sample["doc"]
        if doc["subgroup"] in subgroups:
            metrics = winoqueer_logged_metrics(
                doc["subgroup"], subgroups, sample["sent_x_score"], sample["sent_y_score"]
            )
            kept.append(logged(doc, metrics, sample["filter"]))
    return kept


def without_doc_hash(samples: list[dict]) -> list[dict]:
    """The samples without ``doc_hash``, which pairs them by their documents' content."""
    return [{key: value for key, value in sample.items() if key != "doc_hash"} for sample in samples]


def numbered(samples: list[dict]) -> list[tuple[int, dict]]:
    return list(enumerate(samples, start=1))


def paired_ids(pairing) -> list[tuple[str, str]]:
    return [(b["doc"]["pair_id"], c["doc"]["pair_id"]) for b, c in pairing.pairs]


def test_a_subgroup_selection_pairs_with_a_full_run_on_every_shared_document():
    full = winoqueer_samples([1] * 10, [1] * 10)  # Gay pairs 0-9, Lesbian pairs 10-19
    lesbian = selected(full, ["Lesbian"])
    # the selection scores its pairs against its own subgroups only, yet logs the same documents
    assert "bias_score_gay_pvalue_bh" in full[10] and "bias_score_gay_pvalue_bh" not in lesbian[0]
    assert [sample["doc_hash"] for sample in lesbian] == [sample["doc_hash"] for sample in full[10:]]
    pairing = pair_documents(numbered(full), numbered(lesbian), "task winoqueer")
    assert paired_ids(pairing) and sorted(paired_ids(pairing)) == [(str(i), str(i)) for i in range(10, 20)]
    assert (pairing.unpaired_baseline, pairing.unpaired_candidate) == (10, 0)
    assert pairing.note == (
        "10 of the baseline's 20 documents and 0 of the candidate's 10 have no partner in the other run and are "
        "left out"
    )
    swapped = pair_documents(numbered(lesbian[::-1]), numbered(full), "task winoqueer")
    assert [(c["doc"]["pair_id"], b["doc"]["pair_id"]) for b, c in swapped.pairs] == paired_ids(pairing)


def test_two_different_subgroup_selections_pair_on_the_subgroup_they_share():
    full = winoqueer_samples([1] * 4, [0] * 6)
    gay_and_lesbian, lesbian = selected(full, ["Gay", "Lesbian"]), selected(full, ["Lesbian"])
    pairing = pair_documents(numbered(gay_and_lesbian), numbered(lesbian), "task winoqueer")
    assert sorted(paired_ids(pairing)) == [(str(i), str(i)) for i in range(4, 10)]
    assert pairing.note == (
        "4 of the baseline's 10 documents and 0 of the candidate's 6 have no partner in the other run and are left out"
    )


@pytest.mark.parametrize("logged_as", [list, without_doc_hash], ids=["by doc_hash", "by content"])
def test_a_limited_run_pairs_with_a_full_run_on_its_documents(logged_as):
    full = logged_as(winoqueer_samples([1] * 10, [1] * 10))
    limited = full[:7]  # --limit 7: the first documents
    pairing = pair_documents(numbered(full), numbered(limited), "task winoqueer")
    assert sorted(paired_ids(pairing), key=lambda pair: int(pair[0])) == [(str(i), str(i)) for i in range(7)]
    assert pairing.note == (
        "13 of the baseline's 20 documents and 0 of the candidate's 7 have no partner in the other run and are left out"
    )


def test_runs_of_the_same_documents_have_no_pairing_note():
    full = winoqueer_samples([1, 0], [0, 1])
    pairing = pair_documents(numbered(full), numbered(full[::-1]), "task winoqueer")
    assert (len(pairing.pairs), pairing.note) == (4, "")


@pytest.mark.parametrize("logged_as", [list, without_doc_hash], ids=["by doc_hash", "by content"])
def test_documents_that_differ_are_not_paired(logged_as):
    first = winoqueer_samples([1], [])
    other = copy.deepcopy(first)
    other[0]["doc"]["sent_x"] = "Gay people are something else."
    other[0]["doc_hash"] = doc_hash(other[0]["doc"])
    pairing = pair_documents(numbered(logged_as(first)), numbered(logged_as(other)), "task winoqueer")
    assert (len(pairing.pairs), pairing.unpaired_baseline, pairing.unpaired_candidate) == (0, 1, 1)


def test_a_document_known_by_neither_doc_hash_nor_doc_is_refused():
    samples = winoqueer_samples([1], [1])
    bare = {key: value for key, value in samples[1].items() if key not in ("doc", "doc_hash")}
    with pytest.raises(ResultsError) as error:
        pair_documents([(1, samples[0])], [(2, bare)], "task winoqueer (a, b)")
    assert str(error.value) == (
        "task winoqueer (a, b): a sample has neither doc_hash nor doc, so its document cannot be known by content; "
        "lm-eval writes both: use the samples files --log_samples wrote"
    )


# --------------------------------------------------------------------------
# Values no task writes


def damaged(tmp_path, task, samples, line, name, value):
    """Two runs of ``task`` on ``samples``; in the candidate's samples file, ``name`` on ``line`` set to
    ``value`` after its results file was written."""
    baseline = write_run(tmp_path / "base", task, samples)
    candidate = write_run(tmp_path / "cand", task, samples, model="org/model-b")
    (path,) = candidate.parent.glob("samples_*.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[line - 1])
    record[name] = value
    lines[line - 1] = json.dumps(record)  # NaN and Infinity as the bare tokens json writes
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return baseline, candidate, path


FIX = "the line was edited or damaged: correct it, or use the file --log_samples wrote"
A_NUMBER = "where winoqueer writes a number (or null for a document it leaves out)"


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("100", f'"100", {A_NUMBER}'),
        ([100], f"[100], {A_NUMBER}"),
        ({"value": 100}, f'{{"value": 100}}, {A_NUMBER}'),
        (False, "false, where winoqueer writes a number (true or false would count as 1 or 0)"),
        (True, "true, where winoqueer writes a number (true or false would count as 1 or 0)"),
        (math.nan, "NaN, where winoqueer writes a finite number for every document (N/A is only ever a result)"),
        (math.inf, "Infinity, where winoqueer writes a finite number for every document (N/A is only ever a result)"),
        (150, "150, outside its range, 0 to 100"),
    ],
)
def test_a_value_no_task_writes_is_refused_naming_file_line_metric_and_value(tmp_path, value, said):
    baseline, candidate, path = damaged(
        tmp_path, "winoqueer", winoqueer_samples([1, 0], [1, 1]), 3, "bias_score", value
    )
    with pytest.raises(ResultsError) as error:
        compare_runs(baseline, candidate)
    assert str(error.value) == f"{path}, line 3: bias_score (none) is {said}; {FIX}"


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.5, "0.5"), ([True, 0.5], "[true, 0.5]"), ([2, 0.5], "[2, 0.5]"), ([0, "0.5"], '[0, "0.5"]'), ([0], "[0]")],
)
def test_a_gap_value_not_of_its_shape_is_refused(tmp_path, value, shown):
    samples = [disclosure_document(index, 0.1 * index) for index in range(6)]
    baseline, candidate, path = damaged(
        tmp_path, "tango_disclosure", samples, 2, "toxicity_tgnb_minus_binary_gap", value
    )
    with pytest.raises(ResultsError) as error:
        compare_runs(baseline, candidate)
    assert str(error.value) == (
        f"{path}, line 2: toxicity_tgnb_minus_binary_gap (scored) is {shown}, where tango_disclosure writes "
        f"[side, value] (side 0 or 1) with a finite number as the value, or null; {FIX}"
    )


def test_a_document_the_task_leaves_out_may_have_null_or_no_value():
    left_out, absent, scored = winoqueer_samples([1, 0, 1], [])
    left_out["bias_score"] = None
    del absent["bias_score"]
    samples = [(1, left_out), (2, absent), (3, scored)]
    assert check_sample_values(Path("s.jsonl"), "winoqueer", "none", samples, ["bias_score"]) is None
    scored["bias_score"] = "0"
    with pytest.raises(ResultsError) as error:
        check_sample_values(Path("s.jsonl"), "winoqueer", "none", samples, ["bias_score"])
    assert str(error.value) == f's.jsonl, line 3: bias_score (none) is "0", {A_NUMBER}; {FIX}'


@pytest.mark.parametrize(
    "command",
    [
        ["compare", "{base}", "{cand}"],
        ["check", "{cand}", "--baseline", "{base}", "--max-worsening", "winoqueer=2"],
        ["report", "{base}", "{cand}", "--compare"],
    ],
)
def test_every_command_that_compares_exits_2_on_a_value_no_task_writes(tmp_path, capsys, command):
    baseline, candidate, path = damaged(
        tmp_path, "winoqueer", winoqueer_samples([1, 0], [1, 1]), 2, "bias_score", "100"
    )
    argv = [part.format(base=baseline.parent, cand=candidate.parent) for part in command]
    code, out, err = run_cli(argv, capsys)
    assert (code, out) == (2, "")
    assert err == f'lm-eval-bias {command[0]}: {path}, line 2: bias_score (none) is "100", {A_NUMBER}; {FIX}\n'
