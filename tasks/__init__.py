"""Task YAMLs of lm-eval-bias, one folder per benchmark.

This directory is installed as the package ``lm_eval_bias.tasks`` so that
``lm_eval_bias.tasks_dir()`` and the ``lm_eval.tasks`` entry point can find it.
"""
