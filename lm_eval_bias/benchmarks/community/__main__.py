"""``python -m lm_eval_bias.benchmarks.community``: print the realised prompts as CSV, for review."""

from lm_eval_bias.benchmarks.community.review import main

main()
