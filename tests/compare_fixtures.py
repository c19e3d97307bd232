"""A fixed, hand-made comparison of two runs, for the tests of compare's outputs and of the gate."""

from lm_eval_bias.report.compare import Comparison, TaskComparison
from lm_eval_bias.report.paired_metrics import MetricComparison

MCNEMAR = "exact McNemar; Clopper-Pearson box interval"


def metric(task, name, subgroup, baseline, candidate, interval, pvalue, pvalue_bh, n, *, ideal, worsening_ci, **kw):
    difference = candidate - baseline
    worsening = None if ideal is None else abs(candidate - ideal) - abs(baseline - ideal)
    return MetricComparison(
        task=task,
        metric=name,
        subgroup=subgroup,
        baseline=baseline,
        candidate=candidate,
        difference=difference,
        ci_lower=interval[0],
        ci_upper=interval[1],
        pvalue=pvalue,
        pvalue_bh=pvalue_bh,
        n=n,
        test=kw.pop("test", MCNEMAR),
        ideal=ideal,
        worsening=worsening,
        worsening_ci=worsening_ci,
        **kw,
    )


WINOQUEER = TaskComparison(
    task="winoqueer",
    version="1.0",
    headline_metric="bias_score",
    n_baseline=100,
    n_candidate=90,
    n_matched=90,
    setting_differences=("model_args: pretrained=org/base (baseline), pretrained=org/tuned (candidate)",),
    metrics=(
        metric(
            "winoqueer",
            "bias_score",
            None,
            60.0,
            66.0,
            (4.125, 7.875),
            0.000123,
            0.000123,
            90,
            ideal=50.0,
            worsening_ci=(4.125, 7.875),
        ),
        metric(
            "winoqueer",
            "bias_score_gay",
            "gay",
            55.0,
            52.5,
            (-6.0, 1.0),
            0.25,
            0.5,
            40,
            ideal=50.0,
            worsening_ci=(-6.0, 1.0),
        ),
        metric(
            "winoqueer",
            "bias_score_trans",
            "trans",
            45.0,
            45.0,
            (0.0, 0.0),
            1.0,
            1.0,
            30,
            ideal=50.0,
            worsening_ci=(0.0, 0.0),
            note="no discordant pairs: p = 1",
        ),
    ),
)
TANGO = TaskComparison(
    task="tango_misgender",
    version="2.0",
    headline_metric="consistency",
    n_baseline=48,
    n_candidate=48,
    n_matched=48,
    setting_differences=(),
    metrics=(
        metric(
            "tango_misgender",
            "consistency",
            None,
            0.8,
            0.9,
            (0.05, 0.15),
            0.002,
            0.002,
            48,
            ideal=1.0,
            worsening_ci=(-0.15, -0.05),
        ),
        metric(
            "tango_misgender",
            "distal_minus_nongendered_gap",
            "distal",
            0.1,
            float("nan"),
            (float("nan"), float("nan")),
            float("nan"),
            float("nan"),
            0,
            ideal=None,
            worsening_ci=None,
            test="paired permutation test (2000 random swaps); interval of its rejection size",
            note="no distal antecedent matched",
        ),
    ),
)
COMPARISON = Comparison(
    baseline="org/base",
    candidate="org/tuned",
    baseline_path="runs/base/results_1.json",
    candidate_path="runs/tuned/results_1.json",
    tasks=(WINOQUEER, TANGO),
    skipped=("scm_score: only in the baseline",),
)
