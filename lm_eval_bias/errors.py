"""The errors lm-eval-bias raises for problems a user can fix.

Every one of them carries one readable message that says what is wrong, where
(a file and line, an option, a task, a backend) and how to fix it. The
``lm-eval-bias`` command prints that message alone (no traceback) and exits
with :data:`EXIT_BAD_INPUT`; a Python caller catches :class:`LmEvalBiasError`. A message
shows the text it quotes with :func:`visible`, as every output does.

Exit codes of every ``lm-eval-bias`` subcommand: 0 everything went well; 1 a gate
rule failed (``check``); 2 bad input or configuration (nothing was evaluated or
written).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from lm_eval_bias.text import visible

EXIT_OK = 0
EXIT_GATE_FAILED = 1  # `lm-eval-bias check`: a rule does not hold
EXIT_BAD_INPUT = 2  # bad input or configuration: nothing was evaluated or written


class LmEvalBiasError(RuntimeError):
    """A problem the user can fix; the message says what, where and how. The message shows the
    text it quotes (a path, a model name) with :func:`visible`: a name cannot hide in it."""

    def __str__(self) -> str:
        return visible(super().__str__())


class DataError(LmEvalBiasError):
    """A benchmark's data could not be used."""


class DataNotFoundError(DataError, FileNotFoundError):
    """The data file is missing everywhere it was looked for."""


class MalformedDataError(DataError, ValueError):
    """The data file exists but its content is not what the benchmark needs."""


class ConfigurationError(LmEvalBiasError, ValueError):
    """An option, a task or a backend is set up wrongly (a misspelt or mistyped option,
    a task the chosen model backend cannot score, ``--limit 0``)."""


class BackendUnavailableError(LmEvalBiasError):
    """The model backend cannot start on this machine: its Python package is not installed, or
    the model's files are neither here nor downloadable. Raised before the evaluation starts (or
    in place of the error lm-eval raised while loading the model)."""


class MissingBackendPackageError(BackendUnavailableError, ModuleNotFoundError):
    """The backend's Python package (``vllm``, ``sglang``) is not installed."""


class ModelFilesUnavailableError(BackendUnavailableError, OSError):
    """The model is not in the local Hugging Face cache, and the hub is offline or unreachable."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors: a usage mistake is reported like every other bad input
    (``lm-eval-bias <command>: <message>``, exit code 2), not as argparse's usage block."""

    def error(self, message: str):
        raise ConfigurationError(f"{message}; see {self.prog} --help")


class PreflightError(LmEvalBiasError):
    """Several problems found before the model ran, reported together."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        count = len(self.problems)
        heading = "1 problem" if count == 1 else f"{count} problems"
        super().__init__(
            f"{heading} found before the evaluation started:\n" + "\n".join(f"- {problem}" for problem in self.problems)
        )


def print_run_error(error: BaseException) -> None:
    """Print an error of an evaluation run as both command lines show it (``lm-eval-bias`` and the
    stock ``lm_eval`` with our tasks): ``lm-eval-bias: error: <message>`` on stderr, no traceback."""
    import sys

    print(f"lm-eval-bias: error: {error}", file=sys.stderr)


def exit_with_run_error(error: BaseException) -> None:
    """End a run of the stock ``lm_eval`` CLI on one of our errors as ``lm-eval-bias`` ends it: the
    message (:func:`print_run_error`) and exit code :data:`EXIT_BAD_INPUT`. Called from
    ``sys.excepthook``, where a ``SystemExit`` sets the interpreter's exit code (exit handlers
    still run)."""
    import sys

    print_run_error(error)
    sys.exit(EXIT_BAD_INPUT)
