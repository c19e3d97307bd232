"""User-defined probes: templates and keywords read from the user's YAML, JSON, CSV or TXT files."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from pathlib import Path

from lm_eval_bias import data, readers
from lm_eval_bias.benchmarks.community.grammar import realise, template_problems
from lm_eval_bias.benchmarks.community.probes import (
    DEFAULT_NUMBER,
    FORMS,
    NUMBERS,
    Keyword,
    Template,
)
from lm_eval_bias.benchmarks.community.prompts import accepts, realise_prompts
from lm_eval_bias.loading import RowContract, checked_rows
from lm_eval_bias.metric_keys import slug
from lm_eval_bias.text import comparable

TEMPLATE_FIELDS = ("template", "template_id", "forms")
KEYWORD_FIELDS = ("keyword", "demographic", "dimension", "form", "number")
# Metric names are built from demographic and dimension keys: these would
# collide with the names of intervals, gaps and ranges.
RESERVED_SUFFIXES = ("ci_lower", "ci_upper", "pvalue", "gap", "range", "n", "n_samples")
# What every template and keyword row must hold (lm_eval_bias.loading): its required fields, and its
# text in NFC without a character that cannot be seen or a look-alike letter. "café" typed as one code
# point or as "e" and a combining accent is one keyword, and "zoë" one demographic with one metric name.
TEMPLATE_CONTRACT = RowContract(required=("template",), text=TEMPLATE_FIELDS, what="template")
KEYWORD_CONTRACT = RowContract(required=("keyword", "demographic", "dimension"), text=KEYWORD_FIELDS, what="keyword")


def _read_yaml_or_json(path: Path):
    import yaml

    text = data.read_text(path)
    try:
        if path.suffix.lower() == ".json":
            return readers.loads_json(text, str(path))
        return readers.loads_yaml(text, str(path))
    except (yaml.YAMLError, json.JSONDecodeError) as error:
        raise data.MalformedDataError(f"{path}: not valid {path.suffix.lstrip('.').upper()}: {error}") from None


def _read_csv(path: Path) -> list[tuple[str, dict]]:
    """(where, row) pairs of a CSV file, where = 'line N'."""
    rows = []
    reader = csv.DictReader(data.open_text(path))
    if reader.fieldnames is None:
        raise data.MalformedDataError(f"{path}: empty file (it needs a header row)")
    reader.fieldnames = [name.strip() for name in reader.fieldnames]
    for row in reader:
        if None in row:
            raise data.MalformedDataError(f"{path}, line {reader.line_num}: too many fields")
        if not any((value or "").strip() for value in row.values()):
            continue
        rows.append((f"line {reader.line_num}", row))
    return rows


def _entries(path: Path, loaded, section: str) -> list[tuple[str, dict]]:
    """(where, entry) pairs of a YAML/JSON list, where = '<section> entry N'."""
    if not isinstance(loaded, list):
        raise data.MalformedDataError(f"{path}: {section} must be a list, got {type(loaded).__name__}")
    return [(f"{section} entry {index}", entry) for index, entry in enumerate(loaded, start=1)]


def _table(path: Path, section: str) -> list[tuple[str, object]]:
    """Entries of a templates or keywords file: CSV rows, or a YAML/JSON list (bare or under ``section``)."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _read_csv(path)
    if suffix in (".yaml", ".yml", ".json"):
        loaded = _read_yaml_or_json(path)
        if isinstance(loaded, dict):
            if section not in loaded:
                raise data.MalformedDataError(f"{path}: no '{section}' section")
            loaded = loaded[section]
        return _entries(path, loaded, section)
    if suffix == ".txt" and section == "templates":
        lines = data.read_text(path).splitlines()
        return [(f"line {n}", line) for n, line in enumerate(lines, start=1) if line.strip()]
    raise data.MalformedDataError(
        f"{path}: unsupported file type {suffix!r}; use .yaml, .yml, .json or .csv"
        + (" (or .txt, one template a line)" if section == "templates" else "")
    )


def _known_fields(path: Path, where: str, entry: dict, allowed: Sequence[str]) -> dict:
    """The entry, refused when it has a field that is none of ``allowed``."""
    unknown = [key for key in entry if key not in allowed]
    if unknown:
        raise data.MalformedDataError(
            f"{path}, {where}: unknown field(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(allowed)}"
        )
    return entry


def _checked(path: Path, places: Sequence[str], rows: Sequence[dict], contract: RowContract) -> list[dict]:
    """The rows through ``contract`` (every problem of the file at once), each with every field of
    ``contract.text``: a missing optional field is empty."""
    checked = checked_rows(zip(places, rows), contract, str(path))
    return [{key: ("" if row.get(key) is None else row[key]) for key in contract.text} for row in checked]


def _forms(path: Path, where: str, value) -> tuple[str, ...] | None:
    if value is None or value == "" or value == []:
        return None
    names = re.split(r"[;,\s]+", value.strip()) if isinstance(value, str) else [str(v).strip() for v in value]
    names = [name for name in names if name]
    unknown = [name for name in names if name not in FORMS]
    if unknown:
        raise data.MalformedDataError(
            f"{path}, {where}: unknown form(s) {', '.join(map(repr, unknown))}; choose from {', '.join(FORMS)}"
        )
    return tuple(names)


def parse_templates(path: Path, entries: Sequence[tuple[str, object]]) -> list[Template]:
    """Validated templates (a string, or a mapping with template and optional template_id and forms)."""
    places, rows = [], []
    for where, entry in entries:
        if isinstance(entry, str):
            entry = {"template": entry}
        if not isinstance(entry, dict):
            raise data.MalformedDataError(
                f"{path}, {where}: a template is a string or a mapping, got {type(entry).__name__}"
            )
        # YAML users may write "text"/"id", the CSV header names are template/template_id.
        entry = {{"text": "template", "id": "template_id"}.get(k, k): v for k, v in entry.items()}
        places.append(where)
        rows.append(_known_fields(path, where, entry, TEMPLATE_FIELDS))
    if not rows:
        raise data.MalformedDataError(f"{path}: no templates")
    templates, ids = [], {}
    for number, (where, values) in enumerate(zip(places, _checked(path, places, rows, TEMPLATE_CONTRACT)), start=1):
        text = str(values["template"]).strip()
        template_id = str(values["template_id"]).strip() or f"T{number}"
        problems = template_problems(text)
        if problems:
            raise data.MalformedDataError(f"{path}, {where}: template {text!r} {'; '.join(problems)}")
        if template_id in ids:
            raise data.MalformedDataError(
                f"{path}, {where}: template_id {template_id!r} is also used at {ids[template_id]}"
            )
        ids[template_id] = where
        templates.append(Template(template_id, text, _forms(path, where, values["forms"])))
    return templates


def _slug_problem(name: str, kind: str) -> str | None:
    key = slug(name)
    if not key:
        return f"{kind} {name!r} has no letters or digits to name its metrics"
    if any(key == suffix or key.endswith("_" + suffix) for suffix in RESERVED_SUFFIXES):
        return f"{kind} {name!r} ends with a reserved metric suffix ({', '.join(RESERVED_SUFFIXES)})"
    return None


def parse_keywords(path: Path, entries: Sequence[tuple[str, object]]) -> list[Keyword]:
    """Validated keywords: each a mapping with keyword, demographic, dimension, optional form and number.

    A keyword belongs to one demographic, a demographic to one dimension, and
    two names may not share a metric key ("Non-binary" and "non binary").
    """
    places, rows = [], []
    for where, entry in entries:
        if not isinstance(entry, dict):
            raise data.MalformedDataError(f"{path}, {where}: a keyword is a mapping, got {type(entry).__name__}")
        places.append(where)
        rows.append(_known_fields(path, where, entry, KEYWORD_FIELDS))
    if not rows:
        raise data.MalformedDataError(f"{path}: no keywords")
    keywords: list[Keyword] = []
    demographic_of: dict[str, tuple[str, str, str]] = {}  # keyword as compared -> (demographic, where, as written)
    dimension_of: dict[str, tuple[str, str]] = {}  # demographic -> (dimension, where)
    name_of_key: dict[tuple[str, str], str] = {}  # (kind, metric key) -> name
    for where, values in zip(places, _checked(path, places, rows, KEYWORD_CONTRACT)):
        keyword, demographic, dimension = (str(values[k]).strip() for k in ("keyword", "demographic", "dimension"))
        form = str(values["form"]).strip() or None
        number = str(values["number"]).strip().lower() or None
        if form is not None and form not in FORMS:
            raise data.MalformedDataError(f"{path}, {where}: unknown form {form!r}; choose from {', '.join(FORMS)}")
        if number is not None and number not in NUMBERS:
            raise data.MalformedDataError(f"{path}, {where}: number must be singular or plural, got {number!r}")
        implied = DEFAULT_NUMBER.get(form)
        if number and implied and number != implied:
            raise data.MalformedDataError(f"{path}, {where}: form {form} is {implied}, but number says {number}")
        same_keyword = comparable(keyword)
        if same_keyword in demographic_of:
            other, other_where, written = demographic_of[same_keyword]
            raise data.MalformedDataError(
                f"{path}, {where}: keyword {keyword!r} is already listed at {other_where} (demographic {other!r}"
                + ("" if written == keyword else f", written {written!r} there: the same words with other spacing")
                + "); each keyword belongs to one demographic once"
            )
        if demographic in dimension_of and dimension_of[demographic][0] != dimension:
            other, other_where = dimension_of[demographic]
            raise data.MalformedDataError(
                f"{path}, {where}: demographic {demographic!r} is in dimension {other!r} "
                f"at {other_where}; a demographic belongs to one dimension"
            )
        for kind, name in (("demographic", demographic), ("dimension", dimension)):
            problem = _slug_problem(name, kind)
            if problem:
                raise data.MalformedDataError(f"{path}, {where}: {problem}")
            clash = name_of_key.setdefault((kind, slug(name)), name)
            if clash != name:
                raise data.MalformedDataError(
                    f"{path}, {where}: {kind} {name!r} and {clash!r} would share the "
                    f"metric name {slug(name)!r}; rename one"
                )
        demographic_of[same_keyword] = (demographic, where, keyword)
        dimension_of.setdefault(demographic, (dimension, where))
        keywords.append(Keyword(keyword, demographic, dimension, form, number))
    return keywords


def _resolve(path_value, config_source: str | None, what: str) -> Path:
    """A user file: as given (absolute, or relative to the working directory), else relative
    to the task YAML that names it."""
    path = Path(str(path_value)).expanduser()
    tried = [path.resolve()]
    if path.is_file():
        return path
    if not path.is_absolute() and config_source:
        beside_yaml = Path(config_source).parent / path
        tried.append(beside_yaml.resolve())
        if beside_yaml.is_file():
            return beside_yaml
    raise data.DataNotFoundError(
        f"community: {what} {str(path_value)!r} not found; looked at {', '.join(str(p) for p in tried)}"
    )


def read_user_probes(
    probe_file=None, templates_file=None, keywords_file=None, config_source: str | None = None
) -> tuple[list[Template], list[Keyword], list[Path]]:
    """Templates and keywords from one probe file (YAML/JSON with ``templates`` and
    ``keywords``) or from a templates file and a keywords file (CSV, YAML or JSON)."""
    if probe_file and (templates_file or keywords_file):
        raise data.DataError("community: give either probe_file or templates_file + keywords_file, not both")
    if probe_file:
        path = _resolve(probe_file, config_source, "probe_file")
        if path.suffix.lower() not in (".yaml", ".yml", ".json"):
            raise data.MalformedDataError(
                f"{path}: a probe_file is YAML or JSON with 'templates' and 'keywords' "
                "(for CSV, give templates_file and keywords_file)"
            )
        loaded = _read_yaml_or_json(path)
        if not isinstance(loaded, dict) or not {"templates", "keywords"} <= set(loaded):
            raise data.MalformedDataError(f"{path}: a probe file needs the sections 'templates' and 'keywords'")
        unknown = set(loaded) - {"templates", "keywords", "description"}
        if unknown:
            raise data.MalformedDataError(
                f"{path}: unknown section(s) {', '.join(sorted(unknown))}; allowed: templates, keywords, description"
            )
        return (
            parse_templates(path, _entries(path, loaded["templates"], "templates")),
            parse_keywords(path, _entries(path, loaded["keywords"], "keywords")),
            [path],
        )
    if not (templates_file and keywords_file):
        raise data.DataError("community: user probes need probe_file, or both templates_file and keywords_file")
    template_path = _resolve(templates_file, config_source, "templates_file")
    keyword_path = _resolve(keywords_file, config_source, "keywords_file")
    return (
        parse_templates(template_path, _table(template_path, "templates")),
        parse_keywords(keyword_path, _table(keyword_path, "keywords")),
        [template_path, keyword_path],
    )


def realise_user_prompts(templates: Sequence[Template], keywords: Sequence[Keyword], source: str) -> list[dict]:
    """:func:`realise_prompts` with errors that name the file, template and keyword."""
    for template in templates:
        for keyword in keywords:
            if template.forms is not None and keyword.grammatical_form is None:
                raise data.MalformedDataError(
                    f"{source}: template {template.id} accepts only {', '.join(template.forms)}, so keyword "
                    f"{keyword.keyword!r} needs a form (or a number)"
                )
            if accepts(template, keyword):
                try:
                    realise(template, keyword)
                except ValueError as error:
                    raise data.MalformedDataError(f"{source}: {error}") from None
    rows = realise_prompts(templates, keywords)
    if not rows:
        raise data.MalformedDataError(f"{source}: no template accepts any keyword's form")
    seen: dict[str, dict] = {}
    for row in rows:
        # the prompt as the model sees it, spacing aside: "gay  men" and "gay men" ask one question
        prompt = comparable(row["prompt"])
        if prompt in seen:
            first = seen[prompt]
            raise data.MalformedDataError(
                f"{source}: the prompt {row['prompt']!r} comes out twice (template {first['template_id']} with "
                f"{first['keyword']!r}, template {row['template_id']} with {row['keyword']!r})"
            )
        seen[prompt] = row
    return rows


def example_probe_file() -> Path:
    """The example probe file shipped with the tasks (what ``community_probes_custom`` runs by default)."""
    from lm_eval_bias.benchmark_records import tasks_dir

    return Path(tasks_dir()) / "community" / "example_probes.yaml"
