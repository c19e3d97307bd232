"""GenderCARE's GenderPair benchmark (Tang et al., ACM CCS 2024).

Each prompt gives the model a gender target and a pair of descriptors, one biased and one
anti-biased, and asks for a text using one of them (6 configurations of the pair). The
Bias-Pair Ratio is the share of responses that choose the biased descriptor; the responses'
toxicity and sentiment are scored too. Prompts are rendered from the released pair sets
(``kstanghere/GenderCARE-ccs24``), in the released order: target, then pair, then configuration.

Modules: ``record`` (the benchmark's record, its three data sources and group labels),
``loader`` (reading and checking the pair sets; the ``custom_dataset`` loader and its options),
``prompts`` (pair sets and the paper's Table 1 prompts), ``matcher`` (which descriptor a response
chose), ``scoring`` (the per-prompt metrics), ``views`` (the per-group, spread, gap and configuration
metrics, derived from each prompt's overall values) and ``task`` (the ``process_results`` hook and
``GenderPairTask``).
"""
