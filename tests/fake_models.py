"""Scripted lm-eval models for exact-number tests of generation and log-likelihood tasks."""

import hashlib
import re

from lm_eval.api.model import LM


class ScriptedLM(LM):
    """Always continues with the same text and always prefers the same next pronoun."""

    def __init__(self, continuation=" He was great.", preferred=" He"):
        super().__init__()
        self.continuation, self.preferred = continuation, preferred
        self.generation_prompts = []

    def generate_until(self, requests, disable_tqdm=False):
        self.generation_prompts += [request.args[0] for request in requests]
        return [self.continuation for _ in requests]

    def loglikelihood(self, requests, disable_tqdm=False):
        return [(0.0 if request.args[1] == self.preferred else -1.0, False) for request in requests]

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError


class CountingLM(LM):
    """Answers nothing and counts what it was asked: proves that nothing was sent."""

    def __init__(self):
        super().__init__()
        self.requests = 0

    def generate_until(self, requests, disable_tqdm=False):
        self.requests += len(requests)
        return ["" for _ in requests]

    def loglikelihood(self, requests, disable_tqdm=False):
        self.requests += len(requests)
        return [(0.0, False) for _ in requests]

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError


def _unit_interval(*parts: str) -> float:
    """A number in [0, 1) fixed by ``parts``: the same on every machine and in every process."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class HashedLM(LM):
    """Answers every request with a value fixed by its text alone, so runs are reproducible anywhere.

    Log-likelihoods are multiples of 0.125 in (-8, 0] (so pairs sometimes tie), greediness follows
    the same hash. A generation picks one of the options written in braces in the prompt (as
    GenderPair's prompts list them) or one of a few fixed replies that use pronouns, ratings and
    toxic or friendly words, so that every scorer sees varied text.
    """

    REPLIES = (
        " He said it was great, and his friends agreed.",
        " She is a terrible, stupid person.",
        " They were kind; their answer was 4.",
        " Xe wrote that xir rating is 2 out of 5.",
        " It is 5. Honestly, I love them.",
        " No.",
    )

    def __init__(self):
        super().__init__()

    def loglikelihood(self, requests, disable_tqdm=False):
        answers = []
        for request in requests:
            context, continuation = request.args[0], request.args[1]
            value = -int(64 * _unit_interval("ll", context, continuation)) / 8
            answers.append((value, _unit_interval("greedy", context, continuation) < 0.5))
        return answers

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        return [-int(64 * _unit_interval("rolling", request.args[0])) / 4 for request in requests]

    def generate_until(self, requests, disable_tqdm=False):
        replies = []
        for request in requests:
            prompt = request.args[0]
            options = [option for braces in re.findall(r"\{([^{}]+)\}", prompt) for option in braces.split(", ")]
            pick = _unit_interval("generate", prompt)
            if options and pick < 0.6:
                replies.append(f" A {options[int(pick / 0.6 * len(options))]} person.")
            else:
                replies.append(self.REPLIES[int(pick * len(self.REPLIES))])
        return replies


class HashedDetoxify:
    """A stand-in for Detoxify's ``original`` classifier whose scores are fixed by each text alone.

    A real classifier's float32 arithmetic differs in the last digits between machines and thread
    counts; these scores (multiples of 1/1024) are the same everywhere, so results that go through
    the classifier filter can be compared exactly. Registered under ``detoxify`` by the test using it.
    """

    name = "detoxify"
    labels = ("toxicity", "severe_toxicity", "obscene", "threat", "insult", "identity_attack")

    def __init__(self, **options):
        pass

    def score(self, texts):
        return {label: [int(1024 * _unit_interval(label, text)) / 1024 for text in texts] for label in self.labels}
