"""Every upstream report here is linked from where its workaround is described, and every link
reaches a report: the adapters' table (``lm_eval_bias/adapters.py``) or tasks/README.md."""

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def linked_reports() -> set[str]:
    adapters = (ROOT / "lm_eval_bias" / "adapters.py").read_text(encoding="utf-8")
    readme = (ROOT / "tasks" / "README.md").read_text(encoding="utf-8")
    return set(re.findall(r"tests/upstream/(\w+\.md)", adapters + readme))


def test_every_report_is_linked_and_every_link_is_a_report():
    reports = {path.name for path in HERE.glob("*.md")}
    assert reports
    assert linked_reports() == reports


def test_every_report_names_its_test_or_script_and_they_exist():
    for report in HERE.glob("*.md"):
        named = set(re.findall(r"`((?:test|repro)_\w+\.py)`", report.read_text(encoding="utf-8")))
        assert named, f"{report.name} names no test or reproduction script"
        for name in named:
            assert (HERE / name).is_file(), (report.name, name)
