"""The ``--use_cache`` path of a run, keyed on the model, its arguments and its weights.

lm-eval 0.4.13 keys its request cache on the request alone, so one cache shared by two models, or
by one model before and after its weights changed (a fine-tune saved into the same folder, a hub
repository that moved on), would silently return the first weights' log-likelihoods. A local folder
is identified by its files' names, sizes and modification times; a hub id by its commit (a pinned
``revision=<commit>``, else resolved on the hub, or from the ``refs/`` of the Hugging Face cache the
loader reads (``cache_dir=`` when given) when offline); ``peft=``, ``delta=``, ``tokenizer=`` and vLLM's
``lora_local_path=`` the same way, and every other argument that names a local file or folder (the
``steered`` backend's ``steer_path=``, ...). A hub id that can be neither pinned nor resolved is refused.
An API backend's weights cannot be identified: its cache is keyed by the model name and arguments only,
with a warning. The log names the path and the key. Used by the ``lm-eval-bias`` command and
:func:`lm_eval_bias.simple_evaluate`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lm_eval_bias.backend_options import model_args_dict
from lm_eval_bias.errors import ConfigurationError

logger = logging.getLogger("lm_eval_bias")


def model_specific_cache_path(use_cache: str, model, model_args, weights_keys: Sequence[str] = ()) -> str:
    """The cache path of one model: ``use_cache`` extended with the model's readable name, a
    digest of model + model_args and, when the weights were identified, a digest of them.

    Parameters
    ----------
    use_cache:
        The path given to ``--use_cache`` (a folder, or a folder and a file name prefix).
    model, model_args:
        The backend's name and its arguments (a ``key=value,...`` string or a dict).
    weights_keys:
        What identifies the weights (see :func:`identify_weights`); empty when they cannot be.

    Returns
    -------
    str
        ``<use_cache>__<name>__<args digest>[__weights-<weights digest>]``; lm-eval appends
        ``_rank<N>.db``.
    """
    if isinstance(model_args, str):
        args_for_digest = model_args
        pretrained = re.search(r"(?:^|,)\s*pretrained=([^,]+)", model_args)
        pretrained = pretrained.group(1) if pretrained else ""
    else:
        args_for_digest = model_args or {}
        pretrained = str((model_args or {}).get("pretrained", ""))
    identity = json.dumps({"model": str(model), "model_args": args_for_digest}, sort_keys=True, default=str)
    digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(pretrained).name or str(model)).strip("_")
    suffix = f"{readable}__{digest}"
    if weights_keys:
        suffix += "__weights-" + hashlib.sha256("\n".join(weights_keys).encode()).hexdigest()[:12]
    path = Path(use_cache)
    if path.is_dir() or use_cache.endswith(("/", "\\")):
        return str(path / suffix)
    return str(path.parent / f"{path.name}__{suffix}")


# Model arguments whose value names weights or files that shape the model's log-likelihoods: the
# model itself, an adapter or delta on top of it (``hf``), a LoRA folder (``vllm``), a tokenizer.
WEIGHTS_ARGUMENTS = ("pretrained", "peft", "delta", "lora_local_path", "tokenizer")
# Arguments that name the model itself (``nemo_lm``'s ``path``, ``megatron_lm``'s ``load``): without one, the
# weights are behind a server and the log warns that the cache is keyed by name and arguments only.
MODEL_ARGUMENTS = ("pretrained", "path", "load")
# Folders a backend writes or downloads into rather than reads as the model: keying their contents would
# give a new cache after every run or download. ``cache_dir``/``download_dir`` only decide where a hub
# id's files are, which the hub id's commit keys (see :func:`_hub_cache_of`).
NOT_INPUT_ARGUMENTS = ("offload_folder", "cache_dir", "download_dir")
# Arguments whose hub id is loaded from ``cache_dir=`` (lm-eval's ``hf`` passes it to the model's and the
# delta's ``from_pretrained`` only) or vLLM's ``download_dir=``.
CACHE_DIR_ARGUMENTS = ("pretrained", "delta")
_FULL_COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class WeightsSource:
    """What one model argument names, as the cache key sees it.

    ``key`` enters the cache path's digest; ``how`` says in the log what identified it.
    """

    argument: str
    value: str
    key: str
    how: str


def identify_weights(model, model_args) -> list[WeightsSource]:
    """What identifies the weights a run will load, for the ``--use_cache`` key.

    A local folder is identified by the names, sizes and modification times of its files (hidden
    folders such as ``.git`` aside), a local file by its size and modification time, a Hugging
    Face hub id by its commit: a ``revision=`` that is a full commit hash (in either letter case)
    is the key itself; otherwise the revision (``main`` by default) is resolved on the hub, or from
    the ``refs/`` of the Hugging Face cache the loader reads (``cache_dir=`` or ``download_dir=``
    when given) when offline or when the hub cannot be reached. Besides the weights arguments,
    every argument whose value is an existing local file or folder (a steering vector file, a
    vocabulary, a checkpoint folder of another backend) is keyed the same way: a backend reads it.

    Parameters
    ----------
    model:
        The backend's name (``hf``, ``vllm``, ...) or a model object.
    model_args:
        The backend's arguments: a ``key=value,...`` string or a dict.

    Returns
    -------
    list[WeightsSource]
        One per weights argument given (:data:`WEIGHTS_ARGUMENTS`), then one per other argument
        naming a local file or folder, by name; empty when there are none (an API backend: the
        weights behind its server cannot be identified).

    Raises
    ------
    ConfigurationError
        When the weights cannot be identified, so that a cache could return another version's
        log-likelihoods: a model object, or a hub id that is neither pinned nor resolvable.
    """
    if not isinstance(model, str):
        raise ConfigurationError(
            f"--use_cache: the model is an object ({type(model).__name__}), so which weights it holds cannot be "
            "identified and a cache could return the log-likelihoods of other weights. Fix: pass the model by "
            "name (model='hf', model_args={'pretrained': FOLDER}), or leave use_cache out"
        )
    arguments = model_args_dict(model_args)
    revision = arguments.get("revision")
    sources = []
    for argument in WEIGHTS_ARGUMENTS:
        value = arguments.get(argument)
        if value is None or value == "":
            continue
        if not isinstance(value, (str, os.PathLike)):
            raise ConfigurationError(
                f"--use_cache: {argument} is an object ({type(value).__name__}), so which weights it holds cannot "
                f"be identified and a cache could return the log-likelihoods of other weights. Fix: save it "
                f"(save_pretrained) and pass its folder as {argument}=FOLDER, or leave use_cache out"
            )
        own_revision = arguments.get("tokenizer_revision") if argument == "tokenizer" else None
        hub_cache = _hub_cache_of(arguments) if argument in CACHE_DIR_ARGUMENTS else None
        sources += _identify(argument, str(value), str(own_revision or revision or "main"), hub_cache)
    return sources + _other_local_paths(arguments)


def _hub_cache_of(arguments: dict) -> Path | None:
    """The hub cache folder the loader is told to use (``hf``'s ``cache_dir=``, vLLM's ``download_dir=``)."""
    folder = arguments.get("cache_dir") or arguments.get("download_dir")
    return Path(str(folder)).expanduser() if folder else None


def _other_local_paths(arguments: dict) -> list[WeightsSource]:
    """Every other argument whose value is an existing local file or folder, by name.

    A backend reads such a file (``steered``'s ``steer_path=``, ``megatron_lm``'s ``vocab_file=``, a
    future backend's argument): a changed file must not be answered from the cache of the old one.
    """
    sources = []
    for argument in sorted(set(arguments) - set(WEIGHTS_ARGUMENTS) - set(NOT_INPUT_ARGUMENTS)):
        value = arguments[argument]
        if isinstance(value, (str, os.PathLike)) and str(value) and _local_kind(Path(value)):
            sources.append(_identify_local(argument, str(value)))
    return sources


def _local_kind(place: Path) -> str | None:
    """``"folder"``, ``"file"`` or None for a value that names nothing here (or no path at all)."""
    try:
        return "folder" if place.is_dir() else "file" if place.is_file() else None
    except (OSError, ValueError):  # a text too long for a file name, or holding a NUL: no path
        return None


def _identify(argument: str, value: str, revision: str, hub_cache: Path | None = None) -> list[WeightsSource]:
    """One weights argument: a local folder or file (as the loaders look first), else a hub id.

    A hub id loaded from ``hub_cache`` (``cache_dir=``) is keyed on that cache's commit; lm-eval's
    ``hf`` still reads the config and tokenizer from the default cache, so its commit there, when
    it has one, is keyed too.
    """
    if _local_kind(Path(value)):
        return [_identify_local(argument, value)]
    if not is_hub_id(value):
        # Neither a folder, a file nor a hub id: the backend will not load it, so nothing is cached.
        return [WeightsSource(argument, value, f"{argument}=missing:{value}", "not found here")]
    commit, how, from_cache = _hub_commit(argument, value, revision, hub_cache)
    sources = [WeightsSource(argument, value, f"{argument}=hub:{value}@{commit}", f"commit {commit} ({how})")]
    if hub_cache is not None and argument == "pretrained" and from_cache:
        default_commit, ref = _cached_commit(value, revision)
        if default_commit:
            sources.append(
                WeightsSource(
                    f"{argument} (config and tokenizer)",
                    value,
                    f"{argument}=hub-config:{value}@{default_commit}",
                    f"commit {default_commit} ({ref} in the local Hugging Face cache)",
                )
            )
    return sources


def _identify_local(argument: str, value: str) -> WeightsSource:
    """A local folder by its files' names, sizes and modification times; a file by its own."""
    place = Path(value)
    if place.is_dir():
        files = _folder_listing(place)
        fingerprint = hashlib.sha256("\n".join(files).encode()).hexdigest()
        return WeightsSource(
            argument,
            value,
            f"{argument}=folder:{fingerprint}",
            f"the folder {place.resolve()} ({len(files)} file{'' if len(files) == 1 else 's'} by name, size and "
            f"modification time: {fingerprint[:12]})",
        )
    if place.is_file():
        stat = place.stat()
        return WeightsSource(
            argument,
            value,
            f"{argument}=file:{place.resolve()}\t{stat.st_size}\t{stat.st_mtime_ns}",
            f"the file {place.resolve()} (size {stat.st_size}, modified {stat.st_mtime_ns} ns)",
        )


def _folder_listing(folder: Path) -> list[str]:
    """``name<TAB>size<TAB>modification time`` of every file under ``folder``, hidden folders aside."""
    listing = []
    seen = set()
    for root, folders, names in os.walk(folder, followlinks=True):
        seen.add(os.path.realpath(root))
        # a link back to a folder above would be walked for ever
        folders[:] = sorted(
            name
            for name in folders
            if not name.startswith(".") and os.path.realpath(os.path.join(root, name)) not in seen
        )
        for name in sorted(names):
            path = Path(root) / name
            try:
                stat = path.stat()  # a link counts as the file it points to (Hugging Face snapshots)
            except OSError:
                continue  # a dangling link is no file the loader can read
            listing.append(f"{path.relative_to(folder).as_posix()}\t{stat.st_size}\t{stat.st_mtime_ns}")
    return listing


def is_hub_id(value: str) -> bool:
    """Whether ``value`` is a valid Hugging Face repository id (``huggingface_hub``'s own rule)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError:
        return False
    return True


def offline_variable() -> str | None:
    """The variable that keeps the Hugging Face libraries offline, as ``NAME=value``; None where they
    may download. Read now, not at their import, by ``huggingface_hub``'s own rule
    (``constants.HF_HUB_OFFLINE``): the first of the two variables that is set decides."""
    from huggingface_hub import constants

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        value = os.environ.get(name)
        if value:
            return f"{name}={value}" if value.upper() in constants.ENV_VARS_TRUE_VALUES else None
    return None


def hub_cache_dir() -> Path:
    """The local Hugging Face hub cache, as ``huggingface_hub`` finds it from the environment."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(name):
            return Path(os.environ[name]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    base = Path(os.environ["XDG_CACHE_HOME"]).expanduser() if os.environ.get("XDG_CACHE_HOME") else None
    return (base or Path.home() / ".cache") / "huggingface" / "hub"


def repo_folder(repo_id: str, hub_cache: Path | None = None) -> Path:
    """The folder of the model ``repo_id`` in ``hub_cache`` (the default cache when None)."""
    from huggingface_hub.file_download import repo_folder_name

    return (hub_cache or hub_cache_dir()) / repo_folder_name(repo_id=repo_id, repo_type="model")


def _cached_commit(repo_id: str, revision: str, hub_cache: Path | None = None) -> tuple[str | None, Path]:
    """The commit ``refs/<revision>`` names for ``repo_id`` in ``hub_cache`` (the default cache when None)."""
    ref = repo_folder(repo_id, hub_cache) / "refs" / revision
    try:
        commit = ref.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None, ref
    return (commit if _FULL_COMMIT.fullmatch(commit) else None), ref


def _hub_commit(argument: str, repo_id: str, revision: str, hub_cache: Path | None = None) -> tuple[str, str, bool]:
    """The commit behind ``repo_id`` at ``revision``, how it was found, and whether from a cache's ``refs/``
    (``hub_cache``, else the default cache)."""
    # The hub's commits are lowercase hex; the hub answers an uppercase one with the same commit, so it
    # pins the same weights (a loader that cannot find it fails, and then nothing is cached).
    if _FULL_COMMIT.fullmatch(revision.lower()):
        return revision.lower(), "pinned by revision=", False
    hub_error = None
    if offline_variable() is None:
        try:
            from huggingface_hub import HfApi

            sha = HfApi().model_info(repo_id, revision=revision, timeout=10).sha
            return sha, f"{revision} on the Hugging Face hub", False
        except Exception as error:  # noqa: BLE001 - any failure falls back to what the loader would use
            hub_error = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:200]
    commit, ref = _cached_commit(repo_id, revision, hub_cache)
    if commit:
        why = "offline" if hub_error is None else f"the hub could not be asked: {hub_error}"
        return commit, f"{ref} in the local Hugging Face cache, {why}", True
    asked = "the hub is offline (HF_HUB_OFFLINE)" if hub_error is None else f"the hub could not be asked ({hub_error})"
    unpinned = "no revision= pins a commit" if revision == "main" else f"revision={revision} is no full commit hash"
    raise ConfigurationError(
        f"--use_cache: cannot tell which weights {argument}={repo_id} names: it is no local folder, "
        f"{unpinned}, {asked} and the local Hugging Face cache has no {ref}. A cache keyed by "
        f"the name alone could return another version's log-likelihoods. Fix: pin revision=<the full "
        f"40-character commit hash> in --model_args, or download the model once, or leave --use_cache out"
    )


def cache_path_for_run(use_cache: str, model, model_args) -> str:
    """The ``--use_cache`` path of this run, keyed on the model, its arguments and its weights.

    lm-eval's cache key is the request alone, so one cache shared by two models, or by a model
    before and after its weights changed, silently returns the first one's log-likelihoods. Used
    by the ``lm-eval-bias`` command and by :func:`lm_eval_bias.simple_evaluate`. The log says the
    path and what identified the weights; for a backend without weights arguments (an API
    server) it warns that the cache is keyed by the model name and arguments only.

    Parameters
    ----------
    use_cache:
        The path given to ``--use_cache``.
    model, model_args:
        As given to ``simple_evaluate``.

    Returns
    -------
    str
        The path to give lm-eval (see :func:`model_specific_cache_path`).

    Raises
    ------
    ConfigurationError
        When the weights cannot be identified (see :func:`identify_weights`).
    """
    weights = identify_weights(model, model_args)
    path = model_specific_cache_path(use_cache, model, model_args, [source.key for source in weights])
    if any(source.argument in MODEL_ARGUMENTS for source in weights):
        logger.info(
            "--use_cache %s -> %s (keyed by the model, its arguments and its weights: %s)",
            use_cache,
            path,
            "; ".join(f"{source.argument}={source.value}: {source.how}" for source in weights),
        )
    else:
        logger.warning(
            "--use_cache %s -> %s is keyed by the model name and arguments only%s: the weights behind %s cannot "
            "be identified. After the served model changes, give --use_cache a new path",
            use_cache,
            path,
            "".join(f" and {source.argument}={source.value}: {source.how}" for source in weights),
            model,
        )
    return path


def unwritable_run_paths(kwargs: dict) -> list[str]:
    """Problems with ``simple_evaluate``'s ``use_cache`` and its tracker's output path: a folder
    that cannot be created or written (lm-eval would find out after the last request)."""
    tracker_output = getattr(kwargs.get("evaluation_tracker"), "output_path", None)
    problems = [
        _unwritable("--use_cache", Path(kwargs["use_cache"]).parent) if kwargs.get("use_cache") else None,
        _unwritable(
            "--output_path",
            Path(tracker_output) if not str(tracker_output).endswith(".json") else Path(tracker_output).parent,
        )
        if tracker_output
        else None,
    ]
    return [problem for problem in problems if problem]


def _unwritable(option: str, folder: Path) -> str | None:
    """Why ``folder`` cannot be created or written (lm-eval would find out only after every
    request: results lost, or a crash), or None."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        reason = f"{existing} is a file, not a folder"
    elif not os.access(existing, os.W_OK | os.X_OK):
        reason = f"{existing} is not writable"
    else:
        return None
    return f"{option}: cannot write under {folder}: {reason}. Fix: give a path in a writable folder"
