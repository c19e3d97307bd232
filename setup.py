"""setup.cfg holds the metadata; this file finds the packages, so that a new benchmark package
ships with no list to edit. lm-eval-bias ships no start-up file (``.pth``): the import hook that
makes the stock ``lm_eval`` find our tasks with no flag is the companion distribution
lm-eval-bias-autoload, built from ``lm_eval_bias/autoload/``, which is therefore left out here."""

from setuptools import find_packages, setup

# tasks/ is shipped as lm_eval_bias.tasks (setup.cfg's package_dir), which no search finds. The
# companion's folder has no __init__.py, so no search finds it either; the exclusion says so.
PACKAGES = [
    *find_packages(
        include=["lm_eval_bias", "lm_eval_bias.*"], exclude=["lm_eval_bias.autoload", "lm_eval_bias.autoload.*"]
    ),
    "lm_eval_bias.tasks",
]

setup(packages=PACKAGES)
