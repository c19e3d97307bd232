"""Plugin overhead on a real model: one task run with SmolLM2-135M-Instruct under cProfile.

Runs ``lm_eval_bias.simple_evaluate`` on one task (default ``winoqueer`` on the shared copy of
the public gender subset; ``--limit N`` for its first N documents) with lm-eval's ``hf`` backend
and SmolLM2-135M-Instruct in fp32 on the CPU (``bench/models.py``), loaded before the clock, and
prints the wall time and how it divides: the model's forward passes (``HFLM._model_call`` and
``_model_generate`` and everything under them), the rest of lm-eval, and the plugin
(functions defined under ``lm_eval_bias/``), with the plugin's top functions.

Each function's own time goes to the nearest enclosing plugin, lm-eval or model frame: numpy
called by ``lm_eval_bias.stats`` is plugin time, tokenization called by lm-eval is lm-eval
time, torch under a forward pass is model time. cProfile keeps caller -> callee totals, not
whole stacks, so a library function called from several owners has its time split in
proportion to the time each caller spent in it (as gprof does). cProfile's cost per call
inflates code made of many small calls (lm-eval's and the plugin's per-document code), so
the plugin's share here is an upper bound of an unprofiled run's.

``--compare REF [REF ...]`` runs the same measurement on the plugin as it was at each git
revision (its ``lm_eval_bias/`` and ``tasks/`` exported with ``git archive``, imported ahead of
the editable install), then on the checkout, each in a fresh process, and prints them side by
side (with the ratio when there are two) and whether their results are identical. The
machine's load average before and after each run is printed: on a shared machine compare runs
taken under similar load, and prefer CPU seconds to wall seconds.

``--no-profile`` times the run without cProfile (wall and CPU seconds only, no breakdown).
``--instant`` replaces the model's answers by instant ones derived from a hash of the request's
tokens (``HFLM._loglikelihood_tokens``, ``HFLM.generate_until``), so that what is left of the run
is lm-eval and the plugin: the seconds a change to the plugin saves, to set against a real run.

    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/overhead.py --limit 1000
    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/overhead.py --limit 500 --compare HEAD~3
    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/overhead.py --instant --compare HEAD~2 HEAD~1
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import importlib.util
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import load_average, smollm2_dir  # noqa: E402  bench/models.py

OWNERS = ("model", "lm-eval", "plugin", "other")
MODEL_CALLS = ("_model_call", "_model_generate")


class TreeFinder:
    """Imports ``lm_eval_bias`` (code and task YAMLs) from another tree, ahead of the editable install."""

    def __init__(self, tree: Path):
        self.packages = {"lm_eval_bias": tree / "lm_eval_bias", "lm_eval_bias.tasks": tree / "tasks"}

    def find_spec(self, fullname, path=None, target=None):
        folder = self.packages.get(fullname)
        if folder is None:
            return None
        locations = [str(folder)]
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=locations
        )


def owner_of(func, plugin_dir: str, lm_eval_dir: str) -> str | None:
    """``func``'s owner (:data:`OWNERS`), or None for library code charged to its caller."""
    filename, _line, name = func
    if filename.startswith(lm_eval_dir):
        return "model" if name in MODEL_CALLS and "/models/" in filename else "lm-eval"
    return "plugin" if filename.startswith(plugin_dir) else None


def charge(stats: dict, owner) -> dict:
    """Seconds charged to each owner and to each plugin function (``(file, line, name)`` keys).

    An unowned function's time in calls from each caller goes to that caller's column (an owned
    caller) or context: where a walk up the callers, weighted by their cumulative time in it,
    first meets an owned function (X = (I - Q)^-1 R, solved sparsely; cycles need the solve).
    """
    import numpy
    from scipy import sparse
    from scipy.sparse.linalg import splu

    owned = {func: who for func in stats if (who := owner(func))}
    columns = sorted({func if who == "plugin" else who for func, who in owned.items()}, key=str)
    column = {key: index for index, key in enumerate(columns)}

    def column_of(func):
        return column[func if owned[func] == "plugin" else owned[func]]

    unowned = [func for func in stats if func not in owned]
    row = {func: index for index, func in enumerate(unowned)}
    q, r, via = ([], [], []), ([], [], []), numpy.zeros(len(unowned))
    charged = numpy.zeros(len(columns) + 1)  # the last column: under no owned frame
    for func, (_prim, _calls, own_time, _cum, callers) in stats.items():
        callers = {caller: edge for caller, edge in callers.items() if caller in stats}
        if func in owned:
            charged[column_of(func)] += own_time
            continue
        charged[-1] += max(0.0, own_time - sum(edge[2] for edge in callers.values()))
        total = sum(edge[3] for caller, edge in callers.items() if caller != func) or 1.0
        for caller, (_n, _p, edge_time, edge_cum) in callers.items():
            if caller == func:  # its recursive calls run in its own context
                via[row[func]] += edge_time
                continue
            if caller in owned:
                charged[column_of(caller)] += edge_time
                entries, position = r, column_of(caller)
            else:
                via[row[caller]] += edge_time
                entries, position = q, row[caller]
            for values, value in zip(entries, (row[func], position, edge_cum / total)):
                values.append(value)
    size = len(unowned)
    q_matrix = sparse.csc_matrix((numpy.array(q[2]) * (1 - 1e-12), q[:2]), shape=(size, size))
    r_matrix = sparse.csc_matrix((r[2], r[:2]), shape=(size, len(columns))).toarray()
    contexts = splu((sparse.identity(size, format="csc") - q_matrix).tocsc()).solve(r_matrix)
    reached = via @ contexts
    charged[:-1] += reached
    charged[-1] += via.sum() - reached.sum()
    by_owner = dict.fromkeys(OWNERS, 0.0)
    by_owner["other"] = float(charged[-1])
    functions = {}
    for key, seconds in zip(columns, charged):
        by_owner["plugin" if isinstance(key, tuple) else key] += float(seconds)
        if isinstance(key, tuple):
            functions[key] = float(seconds)
    return {"owners": by_owner, "functions": functions}


INSTANT_TEXTS = ("They said she would come.", "He left early.", "Xe smiled.", "I don't know.", "Ey is here.")


def _digest(*parts) -> int:
    return int(hashlib.blake2b(repr(parts).encode(), digest_size=8).hexdigest(), 16)


def instant_logliks(self, requests, disable_tqdm=False, override_bs=None):
    """``HFLM._loglikelihood_tokens`` without the model: a log-likelihood from a hash of the tokens."""
    return [(-1.0 - _digest(tuple(context), tuple(tokens)) % 20_000 / 1000, False) for _, context, tokens in requests]


def instant_generations(self, requests, disable_tqdm=False):
    """``HFLM.generate_until`` without the model: a sentence chosen by a hash of the prompt."""
    return [INSTANT_TEXTS[_digest(request.args[0]) % len(INSTANT_TEXTS)] for request in requests]


def measure(args) -> dict:
    """One profiled run of ``args.task`` with the plugin of ``args.tree``."""
    tree = Path(args.tree)
    sys.meta_path.insert(0, TreeFinder(tree))
    import lm_eval
    import scipy.stats  # noqa: F401  imported once per process by any run of the plugin
    import torch
    from lm_eval.models.huggingface import HFLM

    import lm_eval_bias

    if args.instant:
        HFLM._loglikelihood_tokens = instant_logliks
        HFLM.generate_until = instant_generations
    lm = HFLM(pretrained=str(smollm2_dir()), batch_size=args.batch_size, device=args.device)
    if args.device.startswith("cuda"):
        # CUDA kernels run asynchronously: without waiting for them inside the forward pass, their
        # time would be charged to whichever later line first reads the results (lm-eval's, mostly).
        lm.model.register_forward_hook(lambda *_: torch.cuda.synchronize())
    metadata = {"data_file": str(args.data_file)} if args.data_file else {}
    manager = lm_eval_bias.task_manager(metadata=metadata)
    run = dict(model=lm, tasks=[args.task], task_manager=manager, metadata=metadata, limit=args.limit)
    loads, profiler = [load_average()], cProfile.Profile()
    start, cpu = time.perf_counter(), time.process_time()
    evaluate = lm_eval_bias.simple_evaluate
    output = evaluate(**run) if args.no_profile else profiler.runcall(evaluate, **run)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    loads.append(load_average())
    plugin_dir = str(Path(lm_eval_bias.__file__).resolve().parent) + os.sep
    lm_eval_dir = str(Path(lm_eval.__file__).resolve().parent) + os.sep
    charged = {"owners": {}, "functions": {}}
    if not args.no_profile:
        charged = charge(pstats.Stats(profiler).stats, lambda func: owner_of(func, plugin_dir, lm_eval_dir))
    top = sorted(charged["functions"].items(), key=lambda item: -item[1])[: args.top]
    results = json.dumps(output["results"], sort_keys=True, default=str)
    return {
        "tree": str(tree),
        "wall_s": wall,
        "cpu_s": cpu,
        "torch_threads": torch.get_num_threads(),
        "load_average": loads,
        "results_digest": hashlib.sha256(results.encode()).hexdigest()[:16],
        "owners": charged["owners"],
        "top": [
            (f"{Path(file).relative_to(plugin_dir)}:{line} {name}", seconds) for (file, line, name), seconds in top
        ],
    }


def run_in_process(args, tree: Path) -> dict:
    """:func:`measure` in a fresh Python process, so that no run reuses another's imports or caches."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "run.json"
        command = [sys.executable, __file__, "--measure", str(tree), "--json", str(out), *args.passed]
        subprocess.run(command, check=True)
        return json.loads(out.read_text())


def exported_tree(revision: str, scratch: Path) -> Path:
    """``lm_eval_bias/`` and ``tasks/`` of ``revision``, written under ``scratch`` by ``git archive``."""
    archive = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "archive", revision, "lm_eval_bias", "tasks"], capture_output=True, check=True
    )
    scratch.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive.stdout, check=True)
    return scratch


def report(runs: dict[str, dict]) -> str:
    """The runs side by side, with the second's ratio to the first when there are two."""
    values = list(runs.values())
    lines = [
        "| | " + " | ".join(runs) + " |" + " ratio |" * (len(runs) == 2),
        "|---" * (len(runs) + 1 + (len(runs) == 2)) + "|",
    ]
    owners = [(f"{owner} s", owner) for owner in OWNERS if owner in values[0]["owners"]]
    for label, key in [("wall s", "wall_s"), ("cpu s", "cpu_s"), *owners]:
        seconds = [run[key] if key in run else run["owners"][key] for run in values]
        cells = [
            f"{value:.2f}" + (f" ({100 * value / run['wall_s']:.2f}%)" if key in OWNERS else "")
            for value, run in zip(seconds, values)
        ]
        if len(values) == 2:
            cells.append(f"{seconds[1] / seconds[0]:.3f}" if seconds[0] else "")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for name, run in runs.items():
        before, after = run["load_average"]
        lines.append(
            f"\n{name} ({run['tree']}): results sha256 {run['results_digest']}, torch threads "
            f"{run['torch_threads']}, load average {before} before, {after} after"
            + ("; top plugin functions:" if run["top"] else "")
        )
        lines.extend(f"  {seconds:8.3f} s  {label}" for label, seconds in run["top"])
    if len(values) > 1:
        identical = len({run["results_digest"] for run in values}) == 1
        lines.append("\nresults identical" if identical else "\nRESULTS DIFFER")
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="winoqueer")
    parser.add_argument("--limit", type=int, help="the task's first N documents (default: all)")
    parser.add_argument("--data-file", type=Path, help="the task's data_file (winoqueer: the shared gender subset)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cpu", help="torch device of the model, e.g. cuda (default cpu)")
    parser.add_argument("--top", type=int, default=12, help="plugin functions listed (default: %(default)s)")
    parser.add_argument("--compare", metavar="REF", nargs="+", help="git revisions measured before the checkout")
    parser.add_argument("--instant", action="store_true", help="instant hashed answers instead of the model's")
    parser.add_argument("--no-profile", action="store_true", help="time the run without cProfile (no breakdown)")
    parser.add_argument("--measure", metavar="TREE", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.data_file is None and args.task == "winoqueer":
        args.data_file = REPO_ROOT.parent / "shared" / "data" / "winoqueer" / "winoqueer_gender_subset.csv"
    args.passed = [f"--task={args.task}", f"--batch-size={args.batch_size}", f"--top={args.top}"]
    args.passed += [f"--device={args.device}"]
    args.passed += [f"--limit={args.limit}"] if args.limit else []
    args.passed += ["--instant"] * args.instant + ["--no-profile"] * args.no_profile
    args.passed += [f"--data-file={args.data_file}"] if args.data_file else []
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.measure:
        args.tree = args.measure
        args.json.write_text(json.dumps(measure(args)))
        return
    with tempfile.TemporaryDirectory() as scratch:
        runs = {}
        for index, revision in enumerate(args.compare or []):
            runs[revision] = run_in_process(args, exported_tree(revision, Path(scratch) / str(index)))
        runs["checkout"] = run_in_process(args, REPO_ROOT)
    limit = f", first {args.limit} documents" if args.limit else ""
    model = "instant hashed answers, SmolLM2's tokenizer" if args.instant else "SmolLM2-135M-Instruct fp32"
    profiled = "" if args.no_profile else ", under cProfile"
    print(f"\n{args.task}{limit}, {model} (hf, {args.device}, batch size {args.batch_size}){profiled}")
    print(report(runs))


if __name__ == "__main__":
    main()
