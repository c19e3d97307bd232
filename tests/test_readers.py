"""The JSON and YAML readers refuse a key given twice, naming it and both lines."""

import math

import pytest
import yaml

from lm_eval_bias.readers import DuplicateKeyError, loads_json, loads_yaml


def test_json_reads_what_json_loads_reads():
    text = '{"a": [1, {"b": "x"}], "c": {"a": 2}, "d": NaN}'
    value = loads_json(text, "f.json", parse_constant=float)
    assert value["a"] == [1, {"b": "x"}] and value["c"] == {"a": 2} and math.isnan(value["d"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"results": {"t": {"m": 1}},\n "results": {}}',
            "f.json, line 2: the key 'results' is given twice in one object (first on line 1)",
        ),
        (
            '{"a": 1,\n "b": {"a": 2, "c": [{"x": 1}, {"x": 2}]},\n "a": 3}',
            "f.json, line 3: the key 'a' is given twice in one object (first on line 1)",
        ),
        ('{"t": {"m": 1,\n\n "m": 2}}', "f.json, line 3: the key 'm' is given twice in one object (first on line 1)"),
        ('[{"a": "}{\\"a\\":", "a": 1}]', "f.json, line 1: the key 'a' is given twice"),
    ],
)
def test_json_refuses_a_repeated_key(text, message):
    with pytest.raises(DuplicateKeyError) as error:
        loads_json(text, "f.json")
    assert str(error.value).startswith(message)
    assert str(error.value).endswith("Fix: keep one of them")


def test_json_line_numbers_count_from_the_line_given():
    with pytest.raises(DuplicateKeyError, match=r"^s.jsonl, line 7: the key 'doc_id'"):
        loads_json('{"doc_id": 1, "doc_id": 2}', "s.jsonl", first_line=7)


def test_invalid_json_is_still_a_value_error():
    with pytest.raises(ValueError):
        loads_json("{", "f.json")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "gate: interval\nrules:\n  - a\ngate: estimate\n",
            "p.yaml, line 4: the key 'gate' is given twice in one object (first on line 1)",
        ),
        ("rules: [a]\nrules: [b]\n", "p.yaml, line 2: the key 'rules'"),
        ("a: {x: 1, x: 2}\n", "p.yaml, line 1: the key 'x'"),
    ],
)
def test_yaml_refuses_a_repeated_key(text, message):
    with pytest.raises(DuplicateKeyError) as error:
        loads_yaml(text, "p.yaml")
    assert str(error.value).startswith(message)


def test_yaml_reads_what_safe_load_reads_merge_keys_included():
    text = "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\nl: [1, 1]\n"
    assert (
        loads_yaml(text, "p.yaml")
        == yaml.safe_load(text)
        == {"base": {"x": 1, "y": 2}, "d": {"x": 3, "y": 2}, "l": [1, 1]}
    )


def test_yaml_is_safe():
    with pytest.raises(yaml.YAMLError):
        loads_yaml("!!python/object/apply:os.system ['true']\n", "p.yaml")


def test_yaml_refuses_a_merge_key_given_twice():
    # PyYAML would let the second merge's "rules" silently replace the first's.
    text = '<<: {rules: ["a <= 50"]}\n<<: {rules: ["a <= 99"]}\n'
    with pytest.raises(DuplicateKeyError) as error:
        loads_yaml(text, "p.yaml")
    assert str(error.value) == (
        "p.yaml, line 2: the key '<<' is given twice in one object (first on line 1); "
        "a plain reader would silently keep only the last. Fix: keep one of them"
    )


def test_yaml_without_merge_keys_refuses_any_merge_key():
    text = "base: &b {x: 1}\nd:\n  <<: *b\n  x: 3\n"
    with pytest.raises(DuplicateKeyError) as error:
        loads_yaml(text, "p.yaml", merge_keys=False)
    assert str(error.value) == (
        "p.yaml, line 3: a merge key ('<<') is not allowed here: a key written beside it would silently "
        "override the merged one. Fix: write the keys out instead of merging them"
    )
