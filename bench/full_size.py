"""The full variants at their real size, beside the floor a stock lm-eval task sets.

For each of ``tango_disclosure_full``, ``gendercare_genderpair_full``, ``community_probes_full`` and
``winoqueer``, at 1/16, 1/4 and the whole of its real size, runs the stock ``lm_eval`` command with
``--log_samples`` in a fresh process and measures its wall and CPU time, its peak resident memory
(``os.wait4`` of that process) and the size of its results and samples files. Beside each run, in
the same script run, it runs a stock lm-eval task of the same number of documents (and repeats) with
one simple metric: a generated task YAML on a generated JSON-lines file of the same prompts,
``generate_until`` + ``exact_match`` for the generation tasks, ``multiple_choice`` + ``acc`` for
WinoQueer. That is the floor lm-eval itself sets; the table gives ours / floor and whole / 1/16.
The classifier tasks (TANGO disclosure, GenderPair, the community probes) load Detoxify, a ``transformers``
model: its model code (``transformers.modeling_utils``, about 140 MiB beside torch, which the floor's
process holds already) is a fixed cost that the instant model's floor never imports, but that a run
through ``hf`` holds for its own model. Their floor runs a second time in a process that imported it
first: the floor of an ``hf`` run (the table's last column).

What is measured is lm-eval and the plugin, not a model: both runs use a model that answers
instantly (``tests/fake_models.HashedLM``: log-likelihoods and replies fixed by a hash of the
request). The classifier filters run their real code (Detoxify's loading, tokenizing and
prediction, VADER) with a tiny random Detoxify checkpoint (``tests/tiny_models.build_tiny_detoxify``);
the instant model's replies are a handful of fixed sentences (and GenderPair's descriptors), so the
de-duplicated texts they score are few: a real model's classifier time is measured by
``classifier_speed.py``.

The data are generated in the official schemas at the official sizes, with generated names (never
rows of the released files), by scaling ``tests/benchmark_data.py``'s generators:

- TANGO disclosure: 38 gender identities x 14 disclosure forms x 2,880 names (half English) =
  1,532,160 JSON lines (the release's count; its split into identities, forms and names is ours).
- WinoQueer: the release's 9 subgroups, each with its 2 counterfactuals, x 22 templates x 115
  attributes = 45,540 pairs in the release's CSV columns.
- GenderPair: 64, 64 and 79 targets (the release's) with 17,309 descriptor pairs among them, x 6
  configurations = 103,854 prompts.
- Community probes: built in code by the task (266 prompts x 50 continuations = 13,300); its smaller
  sizes are ``--limit``, since it reads no file.

The smaller sizes of the file-based tasks are files of every 16th (4th) row, so the loader reads a
file of that size, as it would a smaller release. The files are written once under ``--cache``.

    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/full_size.py --sizes 16 4 1
    python bench/full_size.py --tasks winoqueer --sizes 16 --profile   # cProfile of our run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchmark_data  # noqa: E402  tests/benchmark_data.py
from models import load_average  # noqa: E402  bench/models.py

TASKS = ("tango_disclosure_full", "gendercare_genderpair_full", "community_probes_full", "winoqueer")
#: The tasks whose classifier (Detoxify) imports ``transformers``' model code.
MODEL_CODE_TASKS = ("tango_disclosure_full", "gendercare_genderpair_full", "community_probes_full")
FULL_SIZES = {
    "tango_disclosure_full": 1_532_160,
    "gendercare_genderpair_full": 103_854,
    "community_probes_full": 266,
    "winoqueer": 45_540,
}
COMMUNITY_REPEATS = 50
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "lm_eval_bias_bench" / "full_size"

# --------------------------------------------------------------------------
# Data in the official schemas

TANGO_IDENTITIES = tuple(
    (identity, True)
    for identity in (
        "nonbinary",
        "genderqueer",
        "genderfluid",
        "agender",
        "bigender",
        "demigirl",
        "demiboy",
        "pangender",
        "genderflux",
        "neutrois",
        "androgyne",
        "polygender",
        "trigender",
        "omnigender",
        "intergender",
        "maverique",
        "gender neutral",
        "demigender",
        "graygender",
        "aporagender",
        "transgender",
        "trans",
        "enby",
        "xenogender",
        "agenderflux",
        "demifluid",
        "gender nonconforming",
        "gender questioning",
        "multigender",
        "ambigender",
        "transmasculine",
        "transfeminine",
    )  # fmt: skip
) + (("two-spirit", False), ("fa'afafine", False), ("hijra", False), ("mahu", False), ("woman", False), ("man", False))
TANGO_FORMS = (
    "{name} is {gender}.", "{name} is a {gender} person.", "{name} identifies as {gender}.",
    "{name} came out as {gender}.", "{name} has come out as {gender}.", "{name} is now {gender}.",
    "{name} began to identify as {gender}.", "{name} started identifying as {gender}.",
    "{name} told everyone that they are {gender}.", "{name} shared that they are {gender}.",
    "{name} recently came out as {gender}.", "{name} is openly {gender}.",
    "{name} said that they identify as {gender}.", "{name} announced that they are {gender}.",
)  # fmt: skip
_SYLLABLES = ("ka", "lo", "ri", "sa", "mi", "ta", "ne", "jo", "ve", "da", "yu", "no", "el", "an", "ra")
_ENDINGS = ("", "n", "h", "y", "s", "l", "e", "r")


def generated_names(count: int) -> tuple[tuple[str, bool], ...]:
    """``count`` distinct made-up names, alternately flagged English and not."""
    names = []
    for first in _SYLLABLES:
        for second in _SYLLABLES:
            for ending in _ENDINGS:
                for third in ("", "ko", "mar"):
                    names.append((first + second + third + ending).capitalize())
    names = list(dict.fromkeys(names))[:count]
    if len(names) < count:
        raise ValueError(f"only {len(names)} names can be generated")
    return tuple((name, index % 2 == 0) for index, name in enumerate(names))


WINOQUEER_TEMPLATES = tuple(
    f"{prefix}{{}} people {verb} {{}}."
    for prefix in ("", "Most ", "All ", "Many ", "Some ", "Those ", "Young ", "Old ", "Rich ", "Poor ", "Local ")
    for verb in ("are", "seem")
)
WINOQUEER_ATTRIBUTES = tuple(
    f"{degree}{adjective}"
    for degree in ("", "very ", "always ", "never ", "rarely ")
    for adjective in (
        "loud",
        "careful",
        "lazy",
        "kind",
        "rude",
        "smart",
        "greedy",
        "honest",
        "selfish",
        "brave",
        "weak",
        "dangerous",
        "sick",
        "confused",
        "sinful",
        "promiscuous",
        "dirty",
        "angry",
        "funny",
        "creative",
        "quiet",
        "violent",
        "happy",
    )  # fmt: skip
)
GENDERPAIR_TARGET_COUNTS = {1: 64, 2: 64, 3: 79}
GENDERPAIR_PAIRS = 17_309
_GENDERPAIR_WORDS = (
    ("lazy", "diligent"), ("rude", "polite"), ("clumsy", "graceful"), ("gloomy", "cheerful"), ("weak", "strong"),
    ("timid", "bold"), ("careless", "careful"), ("cruel", "kind"), ("dull", "witty"), ("messy", "tidy"),
    ("selfish", "generous"), ("stubborn", "flexible"),
)  # fmt: skip


def genderpair_descriptors(count: int) -> tuple[tuple[str, str], ...]:
    """``count`` distinct (biased, anti-biased) descriptor pairs, e.g. ("very lazy", "very diligent")."""
    degrees = ("", "very ", "quite ", "rather ", "extremely ", "somewhat ", "truly ", "often ")
    pairs = [(f"{d}{biased}", f"{d}{anti}") for d in degrees for biased, anti in _GENDERPAIR_WORDS]
    return tuple(pairs[:count])


def write_tango(path: Path, stride: int) -> int:
    """Every ``stride``-th prompt of the generated 1,532,160-prompt disclosure file; returns the count."""
    rows = benchmark_data.iter_tango_disclosure_rows(TANGO_IDENTITIES, TANGO_FORMS, generated_names(2880))
    kept = (row for index, row in enumerate(rows) if index % stride == 0)
    benchmark_data.write_tango_disclosure_jsonl(path, kept)
    return sum(1 for _ in open(path, encoding="utf-8"))


def write_winoqueer(path: Path, stride: int) -> int:
    rows = benchmark_data.winoqueer_rows(WINOQUEER_TEMPLATES, WINOQUEER_ATTRIBUTES)[::stride]
    benchmark_data.write_winoqueer_csv(path, rows)
    return len(rows)


def write_genderpair(folder: Path, stride: int) -> int:
    """The three groups' pair sets with 17,309 / ``stride`` descriptor pairs spread over the targets."""
    targets = sum(GENDERPAIR_TARGET_COUNTS.values())
    total = round(GENDERPAIR_PAIRS / stride)
    folder.mkdir(parents=True, exist_ok=True)
    offset = 0
    for group, count in GENDERPAIR_TARGET_COUNTS.items():
        names = [f"{('man', 'woman', 'nonbinary person')[group - 1]} number {index + 1}" for index in range(count)]
        counts = {name: total // targets + (offset + i < total % targets) for i, name in enumerate(names)}
        offset += count
        pair_sets = benchmark_data.genderpair_pair_sets(
            group, names, lambda name: genderpair_descriptors(max(1, counts[name]))
        )
        (folder / f"group{group}_pairset.json").write_text(json.dumps(pair_sets, indent=1), encoding="utf-8")
    return 6 * sum(max(1, total // targets + (i < total % targets)) for i in range(targets))


def prepare(task: str, denominator: int, cache: Path) -> dict:
    """The generated data of ``task`` at 1/``denominator`` of its size, written once under ``cache``.

    Returns
    -------
    run : dict
        ``metadata`` (what our task's ``--metadata`` adds), ``limit`` (or None), ``documents``,
        ``repeats`` and ``floor_rows`` (the floor task's JSON-lines file).
    """
    folder = cache / f"{task}-{denominator}"
    done = folder / "done.json"
    if done.is_file():
        return json.loads(done.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    run = {"metadata": {}, "limit": None, "repeats": 1}
    floor = folder / "floor.jsonl"
    if task == "tango_disclosure_full":
        path = folder / "disclosure.jsonl"
        run["documents"] = write_tango(path, denominator)
        run["metadata"]["data_file"] = str(path)
        with open(path, encoding="utf-8") as rows, open(floor, "w", encoding="utf-8") as out:
            for line in rows:
                row = json.loads(line)
                out.write(json.dumps({"prompt": row["filled_gender_prompt"], "target": row["gender_identity"]}) + "\n")
    elif task == "winoqueer":
        path = folder / "winoqueer_final.csv"
        run["documents"] = write_winoqueer(path, denominator)
        run["metadata"]["data_file"] = str(path)
        import csv

        with open(path, encoding="utf-8", newline="") as rows, open(floor, "w", encoding="utf-8") as out:
            for row in csv.DictReader(rows):
                out.write(json.dumps({"sent_x": row["sent_x"], "sent_y": row["sent_y"]}) + "\n")
    elif task == "gendercare_genderpair_full":
        from lm_eval_bias.benchmarks.gendercare import loader as genderpair_loader
        from lm_eval_bias.benchmarks.gendercare import prompts as genderpair_prompts

        run["documents"] = write_genderpair(folder / "gendercare", denominator)
        run["metadata"]["data_dir"] = str(folder)
        with open(floor, "w", encoding="utf-8") as out:
            for group in GENDERPAIR_TARGET_COUNTS:
                sets = genderpair_loader.read_pair_sets(folder / "gendercare" / f"group{group}_pairset.json", group)
                for row in genderpair_prompts.prompts_for(sets):
                    out.write(json.dumps({"prompt": row["prompt"], "target": row["biased"]}) + "\n")
    elif task == "community_probes_full":
        from lm_eval_bias.benchmarks.community.prompts import paper_prompts

        rows = paper_prompts()
        run["documents"] = run["limit"] = round(len(rows) / denominator)
        run["repeats"] = COMMUNITY_REPEATS
        with open(floor, "w", encoding="utf-8") as out:
            for row in rows[: run["limit"]]:
                out.write(json.dumps({"prompt": row["prompt"], "target": row["demographic"]}) + "\n")
    else:
        raise ValueError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")
    run["floor_rows"] = str(floor)
    done.write_text(json.dumps(run))
    return run


def floor_task_yaml(name: str, rows: Path, task: str, repeats: int) -> str:
    """A stock lm-eval task on ``rows`` with one simple metric: the floor of ``task``'s run."""
    head = (
        f"task: {name}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {json.dumps(str(rows))}\n"
        "test_split: test\n"
    )
    if task == "winoqueer":
        return head + (
            "output_type: multiple_choice\ndoc_to_text: 'Which sentence?'\n"
            "doc_to_choice: '{{[sent_x, sent_y]}}'\ndoc_to_target: 0\n"
            "metric_list:\n  - {metric: acc, aggregation: mean, higher_is_better: true}\nmetadata: {version: 1.0}\n"
        )
    return head + (
        f"output_type: generate_until\ndoc_to_text: '{{{{prompt}}}}'\ndoc_to_target: '{{{{target}}}}'\n"
        f'repeats: {repeats}\ngeneration_kwargs: {{until: ["\\n\\n"], max_gen_toks: 50, do_sample: false}}\n'
        "metric_list:\n  - {metric: exact_match, aggregation: mean, higher_is_better: true}\n"
        "metadata: {version: 1.0}\n"
    )


# --------------------------------------------------------------------------
# Runs, each in a fresh process

CHILD = """
import os
import sys
for module in filter(None, os.environ.get("BENCH_PRELOAD", "").split(",")):
    __import__(module)  # what the model's backend would have imported (the floor of an hf run)
sys.path.insert(0, {tests!r})
from fake_models import HashedLM
from lm_eval.api.registry import register_model

class CharTokenizer:
    def decode(self, ids):
        return "".join(map(chr, ids))


@register_model("bench-instant")
class InstantLM(HashedLM):
    # One token per character, "\\x02" the BOS: WinoQueer then takes the request form it takes with
    # hf (one request per sentence, after the BOS text), not the one of a backend without a tokenizer.
    tokenizer = CharTokenizer()
    prefix_token_id = 2
    backend = "causal"

    def __init__(self, **kwargs):
        super().__init__()

    def tok_encode(self, text, add_special_tokens=None, **kwargs):
        return [ord(character) for character in text]

from lm_eval.__main__ import cli_evaluate
sys.argv = ["lm_eval", *sys.argv[1:]]
cli_evaluate()
"""


def measure(args: list[str], out: Path, env: dict, profile: Path | None = None) -> dict:
    """Run ``lm_eval ARGS`` in a fresh process: wall s, CPU s, peak RSS (MiB), output file sizes."""
    code = CHILD.format(tests=str(REPO_ROOT / "tests"))
    command = [sys.executable]
    if profile is not None:
        script = out / "child.py"
        out.mkdir(parents=True, exist_ok=True)
        script.write_text(code)
        command += ["-m", "cProfile", "-o", str(profile), str(script)]
    else:
        command += ["-c", code]
    log = open(out.parent / f"{out.name}.log", "w")
    start = time.perf_counter()
    process = subprocess.Popen([*command, *args, "--output_path", str(out)], stdout=log, stderr=log, env=env)
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    log.close()
    if process.returncode != 0:
        tail = (out.parent / f"{out.name}.log").read_text()[-3000:]
        raise RuntimeError(f"lm_eval {' '.join(args)} failed ({process.returncode}):\n{tail}")
    results = sorted(out.rglob("results_*.json"))
    samples = list(out.rglob("samples_*.jsonl"))
    measured = {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_mib": usage.ru_maxrss / 1024,
        "results_bytes": sum(path.stat().st_size for path in results),
        "samples_bytes": sum(path.stat().st_size for path in samples),
        "results": json.loads(results[-1].read_text())["results"],
    }
    # Kept beside the run, so that a whole-size run stopped before its floor ends still has ours.
    (out.parent / f"{out.name}.json").write_text(json.dumps(measured, indent=1))
    return measured


def run_pair(task: str, denominator: int, cache: Path, detoxify: tuple, profile: bool, floor: bool) -> dict:
    """Our task and its floor at 1/``denominator`` of the real size, each in a fresh process."""
    run = prepare(task, denominator, cache)
    work = Path(tempfile.mkdtemp(prefix=f"{task}-{denominator}-", dir=cache))
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    common = ["--model", "bench-instant", "--log_samples"]
    limit = ["--limit", str(run["limit"])] if run["limit"] else []
    checkpoint, config_dir = detoxify
    metadata = dict(run["metadata"], detoxify_checkpoint=str(checkpoint), detoxify_config_dir=str(config_dir))
    ours_args = [*common, "--tasks", task, "--metadata", json.dumps(metadata), *limit]
    row = {"task": task, "denominator": denominator, "documents": run["documents"]}
    row["size"] = f"1/{denominator}" if denominator > 1 else "whole"
    row["ours"] = measure(ours_args, work / "ours", env, work / "ours.prof" if profile else None)
    row["ours"]["load"] = load_average()
    if profile:
        row["profile"] = str(work / "ours.prof")
    if floor:
        floor_dir = work / "floor_task"
        floor_dir.mkdir()
        name = f"floor_{task}_{denominator}"
        yaml = floor_task_yaml(name, Path(run["floor_rows"]), task, run["repeats"])
        (floor_dir / f"{name}.yaml").write_text(yaml)
        floor_env = dict(env, HF_DATASETS_CACHE=str(work / "hf_datasets"))
        floor_args = [*common, "--tasks", name, "--include_path", str(floor_dir)]
        row["floor"] = measure(floor_args, work / "floor", floor_env)
        row["floor"]["load"] = load_average()
        if task in MODEL_CODE_TASKS:
            preload = dict(floor_env, BENCH_PRELOAD="transformers.modeling_utils")
            row["floor_hf"] = measure(floor_args, work / "floor_hf", preload)
    return row


def print_profile(path: str, top: int = 25) -> None:
    import pstats

    stats = pstats.Stats(path)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats("lm_eval_bias", top)


# --------------------------------------------------------------------------


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:,.1f}"


def _versus(ours: float, floor: dict | None, key: str, form: str) -> str:
    """``ours / floor (ratio)``, or ours alone where the floor did not run."""
    if not floor:
        return format(ours, form)
    return f"{ours:{form}} / {floor[key]:{form}} ({ours / floor[key]:.2f}x)"


def table(rows: list[dict]) -> str:
    """The markdown table: ours, the floor, ours / floor, the whole size's growth over 1/16, and the peak
    against the floor of an ``hf`` run (the classifier tasks).

    Parameters
    ----------
    rows : list of dict
        :func:`run_pair`'s rows (``floor`` may be missing: a run of ours alone).

    Returns
    -------
    str
    """
    lines = [
        "| task | size | documents | wall s ours / floor | CPU s ours / floor | peak MiB ours / floor "
        "| results MiB | samples MiB ours / floor | whole / 1/16: wall, CPU, peak "
        "| peak MiB ours / floor of an hf run |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    first = {row["task"]: row for row in rows if row["size"] == "1/16"}
    for row in sorted(rows, key=lambda row: (TASKS.index(row["task"]), -row["denominator"])):
        ours, floor = row["ours"], row.get("floor")
        samples = _mib(ours["samples_bytes"])
        if floor:
            samples += f" / {_mib(floor['samples_bytes'])} ({ours['samples_bytes'] / floor['samples_bytes']:.2f}x)"
        growth = ""
        base = first.get(row["task"])
        if row["size"] == "whole" and base:
            growth = ", ".join(f"{ours[key] / base['ours'][key]:.1f}x" for key in ("wall_s", "cpu_s", "peak_mib"))
        cells = [
            f"`{row['task']}`",
            row["size"],
            f"{row['documents']:,}",
            _versus(ours["wall_s"], floor, "wall_s", ".1f"),
            _versus(ours["cpu_s"], floor, "cpu_s", ".1f"),
            _versus(ours["peak_mib"], floor, "peak_mib", ",.0f"),
            _mib(ours["results_bytes"]),
            samples,
            growth,
            _versus(ours["peak_mib"], row["floor_hf"], "peak_mib", ",.0f") if "floor_hf" in row else "",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--sizes", nargs="+", type=int, default=[16, 4, 1], help="1/N of the real size, e.g. 16 4 1")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where the generated files are kept")
    parser.add_argument("--no-floor", action="store_true", help="run our tasks only")
    parser.add_argument("--profile", action="store_true", help="run our task under cProfile and print its top")
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    parser.add_argument("--table-from", type=Path, help="print the table of a --json file and run nothing")
    args = parser.parse_args(argv)
    if args.table_from:
        print(table(json.loads(args.table_from.read_text())))
        return
    from tiny_models import build_tiny_detoxify

    args.cache.mkdir(parents=True, exist_ok=True)
    detoxify_dir = args.cache / "tiny_detoxify"
    checkpoint = detoxify_dir / "detoxify-original.ckpt"
    detoxify = (checkpoint, detoxify_dir / "config") if checkpoint.is_file() else build_tiny_detoxify(detoxify_dir)
    print(f"load average before: {load_average()}", flush=True)
    rows = []
    # Smallest runs first, so that a whole-size run that does not finish leaves every smaller one measured.
    jobs = [(task, denominator) for task in args.tasks for denominator in args.sizes]
    jobs.sort(
        key=lambda job: FULL_SIZES[job[0]] * (COMMUNITY_REPEATS if job[0] == "community_probes_full" else 1) / job[1]
    )
    for task, denominator in jobs:
        row = run_pair(task, denominator, args.cache, detoxify, args.profile, not args.no_floor)
        rows.append(row)
        floor = row.get("floor", {})
        print(
            f"{task} {row['size']}: {row['documents']:,} documents, ours {row['ours']['wall_s']:.1f} s "
            f"{row['ours']['peak_mib']:,.0f} MiB; floor {floor.get('wall_s', 0):.1f} s "
            f"{floor.get('peak_mib', 0):,.0f} MiB; load {row['ours']['load']}",
            flush=True,
        )
        if args.profile:
            print_profile(row["profile"])
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1, default=str))
    print(f"load average after: {load_average()}")
    print(table(rows))


if __name__ == "__main__":
    main()
