"""``lm-eval-bias tango-agreement``: the two TANGO samples files checked before they are compared.

The generation method (``tango_misgender``, ``tango_misgender_sampled``) logs
each prompt's continuation as text; the probability method
(``tango_misgender_prob``) logs one ``[log-likelihood, is-greedy]`` pair per
pronoun family. Each line of both files must be a sample whose ``doc`` has
``template_idx``, ``ante`` and ``pronoun_family``, with ``filtered_resps`` of
its method's shape, and each prompt (and document) may be given once (a prompt is the same
whatever the Unicode form or letter case of its name, and whether its ``template_idx`` is written
``0`` or ``"0"``); anything
else is an error naming the file, the line and what was expected, and two files
given the wrong way round are recognised as such.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from lm_eval_bias import pronouns
from lm_eval_bias.benchmarks.tango.scoring import method_agreement, request_answers
from lm_eval_bias.errors import EXIT_OK, ArgumentParser, LmEvalBiasError
from lm_eval_bias.report.outputs import strict_json
from lm_eval_bias.report.recompute import read_sample_lines
from lm_eval_bias.report.values import ResultsError
from lm_eval_bias.text import invisible_characters, nfc

DOC_KEYS = ("template_idx", "ante", "pronoun_family")
GENERATION = "generation"
PROBABILITY = "probability"
USAGE = "lm-eval-bias tango-agreement samples_tango_misgender_<date>.jsonl samples_tango_misgender_prob_<date>.jsonl"
EXPECTED = {
    GENERATION: "the generated text (a list holding one string, or one list of strings), as tango_misgender logs it",
    PROBABILITY: (
        f"{len(pronouns.FAMILIES)} [log-likelihood, is-greedy] pairs, one per pronoun family "
        f"({', '.join(pronouns.FAMILIES)}), as tango_misgender_prob logs it"
    ),
}


def _is_generation(responses) -> bool:
    # One request per prompt, so one response: its text, or a list of texts with repeats.
    if not isinstance(responses, list) or len(responses) != 1:
        return False
    (first,) = responses
    return isinstance(first, str) or (
        isinstance(first, list) and bool(first) and all(isinstance(text, str) for text in first)
    )


def _is_loglik(value) -> bool:
    if isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _is_probability(responses) -> bool:
    return (
        isinstance(responses, list)
        and len(responses) == len(pronouns.FAMILIES)
        and all(isinstance(pair, list) and len(pair) == 2 and _is_loglik(pair[0]) for pair in responses)
    )


SHAPES = {GENERATION: _is_generation, PROBABILITY: _is_probability}


def _shown(value) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _with_request_answers(samples: list[tuple[int, dict]]) -> list[tuple[int, dict]]:
    """The (line number, sample) pairs, each sample's ``filtered_resps`` one answer per request."""
    return [
        (line, {**sample, "filtered_resps": request_answers(sample["filtered_resps"])})
        if isinstance(sample, dict) and "filtered_resps" in sample
        else (line, sample)
        for line, sample in samples
    ]


def _method_of(samples: list[tuple[int, dict]]) -> str | None:
    """Which method's samples these look like, from the first one."""
    _, first = samples[0]
    responses = first.get("filtered_resps")
    return next((method for method, looks_like in SHAPES.items() if looks_like(responses)), None)


def check_samples(path: Path, samples: list[tuple[int, dict]], method: str) -> None:
    """Every sample must be a TANGO misgendering sample of ``method``'s shape.

    Parameters
    ----------
    path : Path
        The samples file, for messages.
    samples : list of (int, dict)
        Its (line number, sample) pairs.
    method : {"generation", "probability"}
        The method whose samples the file must hold.

    Raises
    ------
    ResultsError
        A line that is not such a sample, naming the file, the line and what was expected.
    """
    for line, sample in samples:
        doc = sample.get("doc")
        if not isinstance(doc, dict) or "filtered_resps" not in sample:
            raise ResultsError(
                f"{path}, line {line}: not an lm-eval sample (no 'doc' object and "
                f"'filtered_resps'); pass the files --log_samples wrote: {USAGE}"
            )
        missing = [key for key in DOC_KEYS if key not in doc]
        if missing:
            raise ResultsError(
                f"{path}, line {line}: the sample's doc has no {', '.join(missing)}, so these are "
                f"not TANGO misgendering samples; pass: {USAGE}"
            )
        # template_idx, a whole number, is checked where prompts are keyed (prompt_key).
        unusable = [key for key in DOC_KEYS[1:] if not isinstance(doc[key], (str, int)) or isinstance(doc[key], bool)]
        if unusable:
            raise ResultsError(
                f"{path}, line {line}: the doc's {', '.join(unusable)} should be text or a "
                f"number, got {_shown([doc[key] for key in unusable])}; use the file --log_samples "
                "wrote"
            )
        responses = sample["filtered_resps"]
        if (
            method == GENERATION
            and SHAPES[method](responses)
            and isinstance(responses[0], list)
            and len(responses[0]) > 1
        ):
            raise ResultsError(
                f"{path}, line {line}: {len(responses[0])} continuations per prompt (tango_misgender_sampled's "
                "samples): the agreement compares one continuation per prompt with the next-pronoun "
                f"probability; pass the samples of tango_misgender (greedy): {USAGE}"
            )
        if not SHAPES[method](responses):
            other = PROBABILITY if method == GENERATION else GENERATION
            hint = (
                f"; these are {other} samples: pass the generation samples first, the probability samples "
                f"second: {USAGE}"
                if SHAPES[other](responses)
                else ""
            )
            raise ResultsError(
                f"{path}, line {line}: filtered_resps should be {EXPECTED[method]}; got {_shown(responses)}{hint}"
            )


def prompt_key(path: Path, line: int, doc: dict) -> tuple[int, str, str]:
    """(template_idx, ante, pronoun_family) as prompts are matched: the index as a whole number
    (``"0"`` is 0), the name in NFC, trimmed and case-folded, the family trimmed.

    TANGO's names are lower case throughout (its prompts are sentence-cased from them), so two
    names that differ only in letter case are one antecedent: the same prompt once sentence-cased,
    never two prompts. A name with a character that cannot be seen (a zero-width space) is
    refused: it would look like a name it does not match.

    Parameters
    ----------
    path : Path
        The samples file, for messages.
    line : int
        The sample's line, for messages.
    doc : dict
        The sample's ``doc``.

    Returns
    -------
    (int, str, str)
        The prompt's key.
    """
    index = doc["template_idx"]
    if isinstance(index, str) and index.strip().isdecimal() and index.strip().isascii():
        index = int(index)
    if not isinstance(index, int) or isinstance(index, bool):
        raise ResultsError(
            f"{path}, line {line}: the doc's template_idx should be a whole number, got {_shown(index)}; use the "
            "file --log_samples wrote"
        )
    ante = str(doc["ante"])
    hidden = invisible_characters(ante)
    if hidden:
        raise ResultsError(
            f"{path}, line {line}: the doc's ante {_shown(ante)} holds characters that cannot be seen "
            f"({', '.join(hidden)}), so it would not match the prompt it looks like; use the file --log_samples "
            "wrote"
        )
    family = str(doc["pronoun_family"]).strip()
    if family not in pronouns.FAMILIES:
        raise ResultsError(
            f"{path}, line {line}: the doc's pronoun_family {_shown(doc['pronoun_family'])} is not one of "
            f"{', '.join(pronouns.FAMILIES)}; use the file --log_samples wrote"
        )
    return index, nfc(ante).strip().casefold(), family


def _spelling(doc: dict, earlier: dict) -> str:
    """How a repeat's fields are written otherwise than the line it repeats, for the message."""
    differs = [
        f"{name} {_shown(earlier[name])} there, {_shown(doc[name])} here"
        for name in DOC_KEYS
        if json.dumps(earlier[name]) != json.dumps(doc[name])
    ]
    return f" (written {'; '.join(differs)}: the same prompt)" if differs else ""


def refuse_repeated_prompts(path: Path, samples: list[tuple[int, dict]]) -> list[dict]:
    """Refuse a prompt given twice: the agreement matches prompts on (template_idx, ante,
    pronoun_family) (see :func:`prompt_key`), which the TANGO data holds once each, so a second line
    would be compared twice (generation) or replace the first (probability), or, written otherwise,
    be left out unseen.

    Parameters
    ----------
    path : Path
        The samples file, for messages.
    samples : list of (int, dict)
        Its (line number, sample) pairs, checked by :func:`check_samples`.

    Returns
    -------
    list of dict
        The samples, each with its doc's template_idx, ante and pronoun_family in the form
        :func:`prompt_key` gives them, so that the two files' prompts match as they are compared.
    """
    first_line: dict[tuple, tuple[int, dict]] = {}
    matched = []
    for line, sample in samples:
        doc = sample["doc"]
        key = prompt_key(path, line, doc)
        matched.append({**sample, "doc": {**doc, **dict(zip(DOC_KEYS, key))}})
        if key not in first_line:
            first_line[key] = (line, sample)
            continue
        first, earlier = first_line[key]
        filters = (earlier.get("filter"), sample.get("filter"))
        why = (
            f" (filters {filters[0]} and {filters[1]}: the agreement takes one filter's samples)"
            if filters[0] != filters[1]
            else ""
        )
        raise ResultsError(
            f"{path}, line {line}: the prompt (template_idx {key[0]}, ante {doc['ante']!r}, pronoun_family {key[2]}) "
            f"repeats line {first}{_spelling(doc, earlier['doc'])}{why}, so it would be counted twice; pass each "
            f"run's samples file as --log_samples wrote it: {USAGE}"
        )
    return matched


def read_pair(generation_path: Path, probability_path: Path) -> tuple[list[dict], list[dict]]:
    """Both files' samples, checked.

    Parameters
    ----------
    generation_path : Path
        The samples file of ``tango_misgender`` (greedy generation).
    probability_path : Path
        The samples file of ``tango_misgender_prob``.

    Returns
    -------
    (list of dict, list of dict)
        Each file's samples, their prompts keyed as :func:`prompt_key` gives them.

    Raises
    ------
    ResultsError
        What is wrong, and where: a line that is not a sample of its method, files given the wrong
        way round, a prompt given twice.
    """
    generation = _with_request_answers(read_sample_lines(generation_path))
    probability = _with_request_answers(read_sample_lines(probability_path))
    if _method_of(generation) == PROBABILITY and _method_of(probability) == GENERATION:
        raise ResultsError(
            f"{generation_path} holds probability samples and {probability_path} generation "
            f"samples: the two files are swapped; pass the generation samples first: {USAGE}"
        )
    check_samples(generation_path, generation, GENERATION)
    check_samples(probability_path, probability, PROBABILITY)
    return refuse_repeated_prompts(generation_path, generation), refuse_repeated_prompts(probability_path, probability)


def agreement(generation_path: Path, probability_path: Path) -> dict:
    """How often TANGO's two methods agree on the same prompts.

    Parameters
    ----------
    generation_path : Path
        The samples file of ``tango_misgender`` (greedy generation).
    probability_path : Path
        The samples file of ``tango_misgender_prob``.

    Returns
    -------
    dict
        :func:`~lm_eval_bias.benchmarks.tango.scoring.method_agreement`'s result.

    Raises
    ------
    ResultsError
        A file that is not what it should be (see :func:`read_pair`).
    LmEvalBiasError
        Files without a prompt in common.
    """
    generation, probability = read_pair(generation_path, probability_path)
    try:
        return method_agreement(generation, probability)
    except ValueError as error:  # no prompt in common: the files are of different runs or selections
        raise LmEvalBiasError(
            f"{generation_path} and {probability_path}: {error}; pass the samples of runs on the same prompts"
        ) from None


def main(argv: list[str]) -> int:
    """``lm-eval-bias tango-agreement GEN.jsonl PROB.jsonl``: print :func:`agreement` as JSON.

    Parameters
    ----------
    argv : list of str
        The command's arguments (after ``tango-agreement``).

    Returns
    -------
    int
        The exit code, 0; bad input raises instead.

    Raises
    ------
    LmEvalBiasError
        Bad arguments or files (the ``lm-eval-bias`` command prints its message and exits 2).
    """
    parser = ArgumentParser(
        prog="lm-eval-bias tango-agreement",
        description="Agreement between tango_misgender (generation) and tango_misgender_prob "
        "(next-pronoun probability), from the samples_*.jsonl files --log_samples wrote.",
    )
    parser.add_argument("generation_samples", type=Path, help="samples_tango_misgender_*.jsonl")
    parser.add_argument("probability_samples", type=Path, help="samples_tango_misgender_prob_*.jsonl")
    args = parser.parse_args(argv)
    print(strict_json(agreement(args.generation_samples, args.probability_samples), indent=2))
    return EXIT_OK
