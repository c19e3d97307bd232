"""Reading results files: reports, leaderboards and CI gates.

- :mod:`.results`: the one reader of lm-eval results files (strict about what would make a
  number wrong), reading each number with :mod:`.values` into the classes of :mod:`.run` (a run,
  its metrics, what each number rests on), with :mod:`.provenance` deciding whether a run is
  partial and why;
- :mod:`.check`, :mod:`.leaderboard`, :mod:`.html` (with :mod:`.sections`, one per benchmark,
  and :mod:`.figures`, drawn with :mod:`.svg`): the gate, the side-by-side table and the report; each knows a task's
  benchmark and headline metric from its metadata in the results file (:mod:`lm_eval_bias.task_metadata`);
- :mod:`.recompute` and :mod:`.agreement`: numbers again from ``--log_samples`` files;
- :mod:`.outputs`: one escaping rule per output format, strict JSON, files written whole.
"""
