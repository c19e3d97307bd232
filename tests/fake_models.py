"""Scripted lm-eval models for exact-number tests of generation and log-likelihood tasks."""

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
