"""Reproduction for ``vllm_prefix_cache_prompt_logprobs.md`` (vLLM issue #42019): with prefix
caching on, vLLM's prompt log-probabilities can depend on which other prompts are scored and in
which order.

Needs a GPU, vLLM and lm-eval (``pip install vllm "lm_eval==0.4.13"``). It is not a test:
pytest does not collect it. Run::

    python tests/upstream/repro_vllm_prefix_cache.py [--model MODEL]

Each setting of ``enable_prefix_caching`` runs in a process of its own, which scores the prompts
twice. First it calls vLLM directly with the sampling parameters that lm-eval's ``vllm`` backend
uses for log-likelihoods, on the prompts in order, in reverse and one at a time. Then it runs
stock lm-eval's ``VLLM.loglikelihood`` on all requests together and on each request alone. It prints
the largest difference of a prompt token's log-probability (vLLM) or of a request's log-likelihood
(lm-eval) between these calls, and how many prompt tokens vLLM says it read from its cache.
Exit status 1 when the values depend on the order with prefix caching on but not with it off,
2 when a run fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"

# Requests shaped like a pair-scoring task's: a preamble longer than one KV-cache block (16 tokens)
# that every prompt shares, then sentences that share their first words or are split at
# different places.
PREAMBLE = (
    "Read each sentence and judge how natural it sounds. Some sentences state a stereotype about a "
    "group of people and some state the same thing about another group.\n\nSentence: "
)
REQUESTS = [
    (PREAMBLE + "Straight", " people are sinful."),
    (PREAMBLE + "Straight people", " are sinful."),
    (PREAMBLE + "Lesbians", " are sinful."),
    (PREAMBLE + "Gay men", " are sinful."),
    (PREAMBLE + "Straight people are", " good at their jobs."),
    (PREAMBLE + "Lesbians are", " good at their jobs."),
    (PREAMBLE + "Most", " bisexual people are confused about who they are."),
    (PREAMBLE + "Most", " straight people are confused about who they are."),
]


def engine_run(model: str, prefix_caching: bool) -> dict:
    """In this process: score the prompts with vLLM directly, then through stock lm-eval."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.vllm_causallms import VLLM
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    lm = VLLM(
        pretrained=model, enable_prefix_caching=prefix_caching, gpu_memory_utilization=0.5, seed=0, batch_size="auto"
    )
    llm = lm.model
    setting = llm.llm_engine.vllm_config.cache_config.enable_prefix_caching
    prompts = [lm.tok_encode(context + continuation) for context, continuation in REQUESTS]
    params = SamplingParams(temperature=0, prompt_logprobs=1, max_tokens=1, detokenize=False)  # lm-eval's

    def score(order):
        outputs = llm.generate([TokensPrompt(prompt_token_ids=prompts[i]) for i in order], params, use_tqdm=False)
        found = {}
        for i, output in zip(order, outputs):
            values = [entry[token].logprob for token, entry in zip(prompts[i][1:], output.prompt_logprobs[1:])]
            found[i] = (values, output.num_cached_tokens or 0)
        return found

    every = list(range(len(prompts)))
    runs = {"in order": score(every), "reversed": score(every[::-1])}
    runs["one at a time"] = {i: score([i])[i] for i in every}
    largest = 0.0
    for run in runs.values():
        for i in every:
            reference = runs["in order"][i][0]
            largest = max(largest, max(abs(a - b) for a, b in zip(run[i][0], reference)))
    cached = {name: [run[i][1] for i in every] for name, run in runs.items()}

    def loglikelihoods(indices):
        requests = [Instance("loglikelihood", {}, REQUESTS[i], k) for k, i in enumerate(indices)]
        return [value for value, _ in lm.loglikelihood(requests, disable_tqdm=True)]

    together = loglikelihoods(every)
    alone = [loglikelihoods([i])[0] for i in every]
    return {
        "enable_prefix_caching": setting,
        "prompt_tokens": sum(len(p) - 1 for p in prompts),
        "vllm_largest_difference": largest,
        "vllm_cached_tokens": cached,
        "lm_eval_together": together,
        "lm_eval_alone": alone,
        "lm_eval_largest_difference": max(abs(a - b) for a, b in zip(together, alone)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--child", choices=["on", "off"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(engine_run(args.model, args.child == "on")))
        return 0
    results = {}
    for setting in ("on", "off"):
        done = subprocess.run(
            [sys.executable, __file__, "--model", args.model, "--child", setting],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            sys.stderr.write(done.stderr[-4000:])
            return 2
        results[setting] = json.loads(done.stdout.strip().splitlines()[-1])
    import vllm

    print(f"vLLM {vllm.__version__}, model {args.model}")
    for setting, found in results.items():
        print(
            f"prefix caching {setting} (engine: {found['enable_prefix_caching']}): "
            f"vLLM prompt log-probabilities, largest difference between orders "
            f"{found['vllm_largest_difference']:.6g} over {found['prompt_tokens']} prompt tokens; "
            f"lm-eval log-likelihoods, together vs alone, largest difference "
            f"{found['lm_eval_largest_difference']:.6g}"
        )
        print(f"  prompt tokens vLLM read from its cache, per prompt: {found['vllm_cached_tokens']}")
        print(f"  lm-eval together: {[round(v, 4) for v in found['lm_eval_together']]}")
        print(f"  lm-eval alone:    {[round(v, 4) for v in found['lm_eval_alone']]}")
    on, off = results["on"], results["off"]
    depends = on["vllm_largest_difference"] > 0 or on["lm_eval_largest_difference"] > 0
    steady = off["vllm_largest_difference"] == 0 and off["lm_eval_largest_difference"] == 0
    print("order-dependent with prefix caching only" if depends and steady else "not reproduced in this run")
    return 1 if depends and steady else 0


if __name__ == "__main__":
    sys.exit(main())
