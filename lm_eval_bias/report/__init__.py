"""Reading results files: reports, leaderboards and CI gates.

Each module uses only those above it in this list:

- :mod:`.values`: one number of a results file as lm-eval writes it, and :class:`ResultsError`;
- :mod:`.outputs`: one escaping rule per output format, strict JSON, files written whole;
- :mod:`.run`: a results file as read (a run, its metrics, what each number rests on);
- :mod:`.task_metrics` and :mod:`.provenance`: one task's entry read into its metrics; the data's
  provenance checked, and whether a run is partial and why;
- :mod:`.results`: the one reader of lm-eval results files, strict about what would make a number
  wrong;
- :mod:`.svg` and :mod:`.figures`: the pieces figures are drawn with, and the papers' figures;
- :mod:`.check`, :mod:`.leaderboard`, :mod:`.html` (with :mod:`.sections`, one per benchmark): the
  gate, the side-by-side table and the report; each knows a task's benchmark and headline metric
  from its metadata in the results file (:mod:`lm_eval_bias.task_metadata`);
- :mod:`.recompute` and :mod:`.agreement`: numbers again from ``--log_samples`` files;
- :mod:`.compare_inputs` and :mod:`.compare`: two runs' documents paired by content, and each
  metric of a task compared between them with a paired test.
"""
