"""TANGO (Ovalle et al., FAccT 2023): misgendering and gender-disclosure prompts.

- ``record``: the benchmark records (``tango_misgender``, ``tango_disclosure``), their data
  sources, the antecedent types, and the ``lm-eval-bias tango-agreement`` command they declare.
- ``loader``: the ``custom_dataset`` loaders and the readers and checks of the two release files.
- ``scoring``: the per-prompt metrics (pronoun consistency, determiners, disclosure toxicity and
  sentiment) and the agreement of the generation and probability methods, pure.
- ``views``: the disclosure metrics per identity and in the gap, derived from each prompt's overall
  values for lm-eval and the readers of samples files.
- ``task``: the hooks the YAMLs in ``tasks/tango/`` name (``process_results``, ``doc_to_choice``,
  ``doc_to_target``) and ``DisclosureTask``.
- ``agreement``: the ``lm-eval-bias tango-agreement`` command, which checks two samples files
  before it compares them.
"""
