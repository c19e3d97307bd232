"""WinoQueer (Felkner et al., ACL 2023): anti-LGBTQ+ bias as a preference between sentence pairs.

For each pair (``sent_x``: the LGBTQ+ sentence, ``sent_y``: its counterfactual) a sentence's score
is, for causal LMs (the paper's Eq. 2, task ``winoqueer``), the summed log-probability of the tokens
the two sentences share after the identity span, each conditioned on everything before it (BOS
included); for masked LMs (Eq. 1, task ``winoqueer_mlm``) the pseudo-log-likelihood of every shared
token. A pair is stereotyped when ``score(sent_x) > score(sent_y)`` after rounding both to 3
decimals, as the authors' code does; ties count as not stereotyped and stay in the denominator.

Modules:

* ``record``: the benchmark's record, data source and subgroups (pure data).
* ``loader``: the CSV reader, the checks of its rows, and the ``custom_dataset`` loader; each
  pair's scored spans (its ``plan``) and template are computed there, once.
* ``scoring``: pure: the diff of a pair's sentences, its requests, scores, outcome and metrics.
* ``signs``: the sign tests' entries, derived from each pair's outcome for lm-eval and the readers.
* ``task``: ``WinoQueerTask`` (Eq. 2) and the hooks its YAML names.
* ``mlm``: ``WinoQueerMLMTask`` (Eq. 1), whose requests only ``hf_mlm`` answers.
* ``hf_mlm``: the ``--model hf-mlm`` backend, masked LMs scored as the authors' code scores them.
"""
