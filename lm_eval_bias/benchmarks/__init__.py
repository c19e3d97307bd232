"""One module per benchmark: its pure logic and the lm-eval hooks its YAML names.

Which module serves which benchmark is said by :data:`lm_eval_bias.benchmark_records.RECORDS`.
"""

import importlib

from lm_eval_bias.benchmark_records import RECORDS

# Each module once, in the records' order (TANGO's two benchmarks share one module).
MODULES = tuple(dict.fromkeys(record.module for record in RECORDS.values()))


def import_all() -> None:
    """Import every benchmark module, so that each has declared its options."""
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")
