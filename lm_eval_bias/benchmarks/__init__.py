"""One module per benchmark: its pure logic and the lm-eval hooks its YAML names."""

import importlib

MODULES = ("winoqueer", "tango", "gendercare", "scm", "community")


def import_all() -> None:
    """Import every benchmark module, so that each has declared its options."""
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")
