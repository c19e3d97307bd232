"""Checks of the Detoxify files a user gives: the config folder (``config.json``,
``tokenizer_config.json``) and the checkpoint (the file, then the dict it holds).

transformers, torch.load and Detoxify fail on a damaged or foreign file with causes that name no
file ("invalid literal for int()", "[Errno 22] Invalid argument"), or, worse, load it and score
noise; these checks name the file, what is wrong with it, and how to fix it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from lm_eval_bias.scorers.base import ScorerError, ScorerUnavailableError


def check_config_dir(config_dir: str, origin: str) -> None:
    """Refuse a Detoxify config folder that transformers would fail on, naming the file.

    Parameters
    ----------
    config_dir:
        The folder with the base model's ``config.json`` and tokenizer files.
    origin:
        Where its path came from (argument, task metadata, environment variable), for messages.

    Raises
    ------
    ScorerUnavailableError
        When the folder or its ``config.json`` is missing.
    ScorerError
        When ``config.json`` or ``tokenizer_config.json`` is not what transformers reads.
    """
    path = Path(config_dir)
    if not path.is_dir():
        raise ScorerUnavailableError(
            f"detoxify: config_dir {config_dir!r} (from {origin}) is not a directory; it must hold "
            "the base model's config.json and tokenizer files (save_pretrained of both)"
        )
    if not (path / "config.json").is_file():
        raise ScorerUnavailableError(
            f"detoxify: config_dir {config_dir!r} (from {origin}) has no config.json; save the base "
            "model's config and tokenizer there with save_pretrained"
        )
    _check_config_json(path / "config.json", origin)
    if (path / "tokenizer_config.json").is_file():
        _check_tokenizer_config(path / "tokenizer_config.json", origin)


_RESAVE_CONFIG = "or save the base model's config there again (AutoConfig.from_pretrained(...).save_pretrained(DIR))"


def _read_json_object(path: Path, where: str, fix: str) -> dict:
    import json

    from lm_eval_bias.data import read_text
    from lm_eval_bias.readers import loads_json

    text = read_text(path)  # a byte that is not UTF-8: its own error, naming the line
    try:
        value = loads_json(text, str(path))
    except json.JSONDecodeError as error:
        raise ScorerError(f"{where} is not valid JSON ({error}); fix it, {fix}") from None
    if not isinstance(value, dict):
        raise ScorerError(f"{where} holds a JSON {type(value).__name__}, not an object; {fix}")
    return value


def _check_tokenizer_config(path: Path, origin: str) -> None:
    """Refuse a tokenizer_config.json whose length limit is no number (truncation compares with it)."""
    where = f"detoxify: {path} (config_dir from {origin})"
    fix = "or save the base model's tokenizer there again (AutoTokenizer.from_pretrained(...).save_pretrained(DIR))"
    limit = _read_json_object(path, where, fix).get("model_max_length")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit < 1):
        raise ScorerError(f"{where}: model_max_length is {limit!r}, not a number of tokens >= 1; fix it, {fix}")


def _check_config_json(path: Path, origin: str) -> None:
    """Refuse a config.json that transformers would fail on with a cause that names no file.

    Its label maps matter most: transformers reads ``id2label``'s keys as label numbers
    (``int(key)``), so names as keys failed with "invalid literal for int()".
    """
    where = f"detoxify: {path} (config_dir from {origin})"
    config = _read_json_object(path, where, _RESAVE_CONFIG)
    id2label = config.get("id2label")
    if id2label is not None:
        keys = list(id2label) if isinstance(id2label, dict) else None
        bad = next((key for key in keys or () if not str(key).strip().lstrip("-").isdigit()), None)
        if keys is None or bad is not None:
            found = f"the key {bad!r}" if bad is not None else f"a JSON {type(id2label).__name__}"
            raise ScorerError(
                f"{where}: id2label has {found}, but it maps label numbers to names "
                f'({{"0": "toxic", "1": "severe_toxic", ...}}); fix it or remove id2label and label2id (Detoxify '
                f"takes its labels from the checkpoint), {_RESAVE_CONFIG}"
            )
    label2id = config.get("label2id")
    if label2id is not None and not (
        isinstance(label2id, dict) and all(isinstance(v, int) and not isinstance(v, bool) for v in label2id.values())
    ):
        raise ScorerError(
            f'{where}: label2id must map label names to numbers ({{"toxic": 0, ...}}); fix it or remove '
            f"id2label and label2id (Detoxify takes its labels from the checkpoint), {_RESAVE_CONFIG}"
        )


_ZIP_MAGIC = b"PK\x03\x04"
_LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/"


def load_checkpoint_dict(checkpoint: str, origin: str, device: str, fix: str) -> dict:
    """The dict a Detoxify checkpoint file holds, checked.

    Parameters
    ----------
    checkpoint:
        The ``.ckpt`` file's path.
    origin:
        Where the path came from, for messages.
    device:
        Where torch loads the weights.
    fix:
        How to get a good copy, appended to every message.

    Returns
    -------
    dict
        The checkpoint: ``config`` and ``state_dict``.

    Raises
    ------
    ScorerUnavailableError
        When the path is a folder or no file.
    ScorerError
        When the file is empty, damaged, a Git LFS pointer, an HTML page, not a PyTorch checkpoint,
        or not a Detoxify one.
    """
    import torch

    where = f"detoxify: checkpoint {checkpoint!r} (from {origin})"
    path = Path(checkpoint)
    if path.is_dir():
        inside = sorted(p.name for p in path.glob("*.ckpt"))
        hint = f" (it holds {', '.join(inside)})" if inside else ""
        raise ScorerUnavailableError(f"{where} is a folder{hint}, not a file; give the path of the .ckpt file itself")
    if not path.is_file():
        raise ScorerUnavailableError(f"{where} does not exist or is not a file")
    problem = _checkpoint_file_problem(path)
    if problem is not None:
        raise ScorerError(f"{where} {problem}; {fix}")
    try:
        # Detoxify checkpoints pickle a plain config dict beside the weights.
        loaded = torch.load(checkpoint, map_location=device, weights_only=False)
    except Exception as error:
        cause = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ScorerError(
            f"{where} cannot be read by torch.load ({cause}): it is not a PyTorch checkpoint, or it is damaged; {fix}"
        ) from error
    _check_checkpoint_dict(loaded, where)
    return loaded


def _checkpoint_file_problem(path: Path) -> str | None:
    """What makes the file no complete checkpoint, found before torch.load (whose causes name no
    file: a truncated archive gives "[Errno 22] Invalid argument"); None when nothing is seen."""
    import zipfile

    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(512)
    if size == 0:
        return "is empty (0 bytes)"
    if head.startswith(_LFS_POINTER_PREFIX):
        return "is a Git LFS pointer, not the checkpoint itself"
    if head.lstrip().lower().startswith((b"<!doctype html", b"<html")):
        return "is an HTML page (a failed download?), not a checkpoint"
    if not head.startswith(_ZIP_MAGIC):
        return None  # the legacy (pre-zip) torch format, or no checkpoint: torch.load tells
    try:
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()  # reads every part once, checking its CRC
    except (zipfile.BadZipFile, OSError, EOFError):
        return f"is truncated or damaged: it is not a complete zip archive, as torch.save writes ({size:,} bytes)"
    if damaged is not None:
        return f"is damaged: its part {damaged!r} does not match its checksum (CRC)"
    return None


def _check_checkpoint_dict(loaded, where: str) -> None:
    """Refuse a loaded checkpoint whose config Detoxify would misread (``classes`` as a string
    would become one label per letter) or fail on with a cause that names no file."""
    try:
        args = loaded["config"]["arch"]["args"]
        classes = loaded["config"]["dataset"]["args"]["classes"]
        loaded["state_dict"]
        args["model_type"]
    except (KeyError, TypeError):
        raise ScorerError(
            f"{where} is not a Detoxify checkpoint: it needs config.arch.args, "
            "config.dataset.args.classes and state_dict"
        ) from None
    problems = []
    num_classes = args.get("num_classes") if isinstance(args, dict) else None
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 1:
        problems.append(f"config.arch.args.num_classes is {num_classes!r}, not a whole number >= 1")
    if not isinstance(classes, (list, tuple)) or not all(isinstance(name, str) and name for name in classes):
        problems.append(f"config.dataset.args.classes is {classes!r:.80}, not a list of label names")
    elif not problems and not 1 <= len(classes) <= num_classes:
        problems.append(f"config.dataset.args.classes names {len(classes)} labels for {num_classes} outputs")
    for key in ("model_name", "tokenizer_name"):
        if not isinstance(args.get(key), str):
            problems.append(f"config.arch.args.{key} is {args.get(key)!r}, not a transformers class name")
    weights = loaded["state_dict"]
    if not isinstance(weights, Mapping) or not weights:
        # transformers would start every missing weight at random, with only a log line to say so.
        problems.append(
            f"state_dict is {'empty' if isinstance(weights, Mapping) else repr(weights)[:40]}, not the weights"
        )
    if not isinstance(args["model_type"], str):
        problems.append(f"config.arch.args.model_type is {args['model_type']!r}, not a hub id or folder")
    if problems:
        raise ScorerError(
            f"{where}: {'; '.join(problems)}; use a checkpoint as Detoxify releases them, or fix its config"
        )
