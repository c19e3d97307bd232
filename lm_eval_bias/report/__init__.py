"""Reading results files: reports, leaderboards, comparisons and CI gates.

Each module uses only those above it in this list:

- :mod:`.values`: one number of a results file as lm-eval writes it, and :class:`ResultsError`;
- :mod:`.outputs` and :mod:`.tables`: one escaping rule per output format, strict JSON, files
  written whole; one table model rendered as HTML, Markdown and text;
- :mod:`.run`: a results file as read (a run, its metrics, what each number rests on);
- :mod:`.task_metrics` and :mod:`.provenance`: one task's entry read into its metrics; the data's
  provenance checked, and whether a run is partial and why;
- :mod:`.results`: the one reader of lm-eval results files, strict about what would make a number
  wrong;
- :mod:`.svg`, :mod:`.figures` and :mod:`.sections`: the pieces figures are drawn with, and each
  task's section drawn from the figure specs of its benchmark's record;
- :mod:`.leaderboard` and :mod:`.html`: the side-by-side table and the report; each knows a task's
  benchmark and headline metric from its metadata in the results file
  (:mod:`lm_eval_bias.task_metadata`);
- :mod:`.recompute`: numbers again from ``--log_samples`` files;
- :mod:`.compare_inputs`, :mod:`.paired_metrics`, :mod:`.strict_bounds` and :mod:`.compare`: two
  runs' documents paired by content, and each metric of a task compared between them with a paired
  test; :mod:`.compare_text`, :mod:`.verdicts`, :mod:`.forest_plot` and :mod:`.compare_outputs`
  write the comparison out;
- :mod:`.gate_rules`, :mod:`.no_verdict`, :mod:`.threshold_gate`, :mod:`.worsening_gate` and
  :mod:`.gate_summary`: the CI gate's rules, its verdicts on one run and on a paired comparison,
  and the text it prints.
"""
