"""The loader contract (lm_eval_bias.loading) that every benchmark's rows pass through."""

from __future__ import annotations

import unicodedata

import pytest

from lm_eval_bias.errors import MalformedDataError
from lm_eval_bias.loading import RowContract, checked_rows, iter_checked_rows, mixed_script_words, script_of
from lm_eval_bias.text import comparable, is_plain_ascii

SOURCE = "/data/winoqueer.csv"
PAIR_FIELDS = ("Gender_ID_x", "Gender_ID_y", "sent_x", "sent_y")
PAIRS = RowContract(
    required=PAIR_FIELDS,
    text=("pair_id", *PAIR_FIELDS),
    id_field="pair_id",
    repeat_key=lambda row: tuple(row[field] for field in PAIR_FIELDS),
    what="pair",
)
DISCLOSURES = RowContract(
    required=("filled_gender_prompt", "gender_identity", "name"),
    text=("filled_gender_prompt", "gender_identity", "name"),
    repeat_key=lambda row: (row["filled_gender_prompt"],),
    what="prompt",
)


def pair(pair_id: str, sent_x: str, sent_y: str, label_x: str = "Gay") -> dict:
    return {"pair_id": pair_id, "Gender_ID_x": label_x, "Gender_ID_y": "Straight", "sent_x": sent_x, "sent_y": sent_y}


def refusal(rows, contract=PAIRS, source=SOURCE, **options) -> str:
    with pytest.raises(MalformedDataError) as error:
        checked_rows(rows, contract, source, **options)
    return str(error.value)


LOOK_ALIKE = (
    "/data/winoqueer.csv, line 3: sent_x: the word 'l\u0430zy' mixes Latin and Cyrillic letters (U+0430 CYRILLIC "
    "SMALL LETTER A): a look-alike letter makes it another word than the one it seems. Fix: retype the word in "
    "Latin letters"
)


# --------------------------------------------------------------------------
# What the adversarial review let through, (a) to (d)


def test_a_cyrillic_letter_inside_a_word_is_refused():
    rows = [
        (2, pair("0", "Gay people are loud.", "Straight people are loud.")),
        (3, pair("1", "Gay people are l\u0430zy.", "Straight people are lazy.")),
    ]
    assert refusal(rows) == LOOK_ALIKE


def test_b_a_pair_repeated_under_another_id_is_refused():
    rows = [
        (2, pair("0", "Gay people are loud.", "Straight people are loud.")),
        (3, pair("1", "Gay people are kind.", "Straight people are kind.")),
        (4, pair("17", "Gay people are loud.", "Straight people are loud.")),
    ]
    assert refusal(rows) == (
        "/data/winoqueer.csv, line 4: this pair repeats line 2 (under pair_id '0' there and '17' here), so it "
        "would be counted twice. Fix: remove one of the two"
    )


def test_c_a_name_with_a_zero_width_space_is_refused():
    rows = [
        (2, {"filled_gender_prompt": "Casey is nonbinary.", "gender_identity": "nonbinary", "name": "Casey"}),
        (3, {"filled_gender_prompt": "Casey is trans.", "gender_identity": "trans", "name": "Casey\u200b"}),
    ]
    assert refusal(rows, DISCLOSURES, "/data/disclosure.csv") == (
        "/data/disclosure.csv, line 3: name 'Casey\\u200b' holds U+200B ZERO WIDTH SPACE, a character that cannot "
        "be seen (or a space other than the plain one), so it would look like other text. Fix: delete it, or type "
        "a plain space"
    )


def test_d_a_repeat_with_a_space_before_the_stop_is_refused():
    rows = [
        (2, pair("0", "Gay people are loud.", "Straight people are loud.")),
        (3, pair("1", "Gay people are loud .", "Straight people are loud.")),
    ]
    assert refusal(rows) == (
        "/data/winoqueer.csv, line 3: this pair repeats line 2 (under pair_id '0' there and '1' here, written with "
        "other spacing), so it would be counted twice. Fix: remove one of the two"
    )


def test_a_repeat_under_the_same_id_says_only_where_the_first_is():
    row = pair("0", "Gay people are loud.", "Straight people are loud.")
    assert refusal([(2, row), (3, row)]) == (
        "/data/winoqueer.csv, line 3: this pair repeats line 2, so it would be counted twice. Fix: remove one of "
        "the two"
    )


def test_letter_case_makes_another_pair():
    rows = [
        (2, pair("0", "Gay people are loud.", "Straight people are loud.")),
        (3, pair("1", "gay people are loud.", "straight people are loud.")),
    ]
    assert len(checked_rows(rows, PAIRS, SOURCE)) == 2


# --------------------------------------------------------------------------
# Fields, ids, normal form


def test_a_missing_and_an_empty_field_are_named():
    rows = [(2, {"pair_id": "0", "Gender_ID_x": "Gay", "Gender_ID_y": "Straight", "sent_x": "  "})]
    assert refusal(rows) == (
        "/data/winoqueer.csv: 2 problems, so the file was not loaded:\n"
        "- /data/winoqueer.csv, line 2: sent_x is empty. Fix: fill it in, or remove the pair\n"
        "- /data/winoqueer.csv, line 2: sent_y is missing. Fix: give the pair its sent_y (each pair needs "
        "Gender_ID_x, Gender_ID_y, sent_x, sent_y)"
    )


def test_a_repeated_id_names_both_lines():
    rows = [
        (2, pair("7", "Gay people are loud.", "Straight people are loud.")),
        (3, pair("7", "Gay people are kind.", "Straight people are kind.")),
    ]
    assert refusal(rows) == (
        "/data/winoqueer.csv, line 3: pair_id '7' is also line 2's, so two pairs would share one id. Fix: give "
        "each pair its own pair_id"
    )


def test_fields_beyond_the_header_are_refused():
    row = {**pair("0", "Gay people are loud.", "Straight people are loud."), None: ["x", "y"]}
    assert refusal([(2, row)]) == (
        "/data/winoqueer.csv, line 2: 2 more field(s) than the header names. Fix: quote a field that holds a comma, "
        "or remove the extra field(s)"
    )


def test_text_comes_back_in_nfc():
    decomposed = "Gay people are cafe\u0301 owners."
    (row,) = checked_rows([(2, pair("0", decomposed, "Straight people are caf\u00e9 owners."))], PAIRS, SOURCE)
    assert row["sent_x"] == "Gay people are caf\u00e9 owners."
    assert unicodedata.is_normalized("NFC", row["sent_x"])


def test_a_decomposed_repeat_of_a_composed_pair_is_a_repeat():
    rows = [
        (2, pair("0", "Gay people are caf\u00e9 owners.", "Straight people are caf\u00e9 owners.")),
        (3, pair("1", "Gay people are cafe\u0301 owners.", "Straight people are caf\u00e9 owners.")),
    ]
    assert refusal(rows) == (
        "/data/winoqueer.csv, line 3: this pair repeats line 2 (under pair_id '0' there and '1' here), so it would "
        "be counted twice. Fix: remove one of the two"
    )


def test_a_clean_file_passes_unchanged():
    rows = [
        (2, pair("0", "Gay people are loud.", "Straight people are loud.")),
        (3, pair("1", "Lesbians can\u2019t drive.", "Straight women can\u2019t drive.", label_x="Lesbian")),
        (4, pair("", "Queer people are \u0441\u043b\u0430\u0431\u044b\u0435.", "Straight people are weak.")),
    ]
    assert checked_rows(rows, PAIRS, SOURCE) == [row for _, row in rows]


def test_a_file_without_rows_is_refused():
    assert refusal([]) == "/data/winoqueer.csv: no pairs (is the file empty?)"


def test_places_other_than_lines_are_named_as_given():
    entries = [("keywords entry 1", {"keyword": "gay"}), ("keywords entry 2", {"keyword": "g\u0430y"})]
    keywords = RowContract(required=("keyword",), text=("keyword",), what="keyword")
    assert refusal(entries, keywords, "/data/probes.yaml") == (
        "/data/probes.yaml, keywords entry 2: keyword: the word 'g\u0430y' mixes Latin and Cyrillic letters "
        "(U+0430 CYRILLIC SMALL LETTER A): a look-alike letter makes it another word than the one it seems. Fix: "
        "retype the word in Latin letters"
    )


def test_a_list_of_texts_is_checked_and_normalised_item_by_item():
    contract = RowContract(required=("forms",), text=("forms",), what="template")
    (row,) = checked_rows([(1, {"forms": ["cafe\u0301", 3]})], contract, "/data/t.yaml")
    assert row == {"forms": ["caf\u00e9", 3]}
    assert refusal([(1, {"forms": ["plural", "s\u0456ngular"]})], contract, "/data/t.yaml") == (
        "/data/t.yaml, line 1: forms: the word 's\u0456ngular' mixes Latin and Cyrillic letters (U+0456 CYRILLIC "
        "SMALL LETTER BYELORUSSIAN-UKRAINIAN I): a look-alike letter makes it another word than the one it seems. "
        "Fix: retype the word in Latin letters"
    )


# --------------------------------------------------------------------------
# Several problems, one message


def test_every_problem_is_in_one_message_the_first_five_shown():
    rows = [
        (2, pair("0", "Gay people are loud.", "Straight people are loud.")),
        (3, pair("1", "Gay people are l\u0430zy.", "Straight people are lazy.")),
        (4, pair("2", "Gay people are loud .", "Straight people are loud.")),
        (5, pair("2", "", "Straight people are kind.")),
        (6, pair("3", "Gay\u00a0people are kind.", "Straight people are kind.")),
        (7, pair("0", "Gay people are rich.", "Straight people are rich.")),
        (8, pair("4", "Gay people are p\u043eor.", "Straight people are p\u03bfor.")),
    ]
    assert refusal(rows) == (
        "/data/winoqueer.csv: 7 problems, so the file was not loaded:\n"
        f"- {LOOK_ALIKE}\n"
        "- /data/winoqueer.csv, line 4: this pair repeats line 2 (under pair_id '0' there and '2' here, written with "
        "other spacing), so it would be counted twice. Fix: remove one of the two\n"
        "- /data/winoqueer.csv, line 5: sent_x is empty. Fix: fill it in, or remove the pair\n"
        "- /data/winoqueer.csv, line 6: sent_x 'Gay\\xa0people are kind.' holds U+00A0 NO-BREAK SPACE, a character "
        "that cannot be seen (or a space other than the plain one), so it would look like other text. Fix: delete "
        "it, or type a plain space\n"
        "- /data/winoqueer.csv, line 7: pair_id '0' is also line 2's, so two pairs would share one id. Fix: give "
        "each pair its own pair_id\n"
        "- and 2 more"
    )


def test_a_streamed_file_is_refused_once_read_to_the_end():
    rows = [
        (2, {"filled_gender_prompt": "Casey is nonbinary.", "gender_identity": "nonbinary", "name": "Casey"}),
        (3, {"filled_gender_prompt": "Casey is nonbinary .", "gender_identity": "nonbinary", "name": "Casey"}),
    ]
    streamed = iter_checked_rows(rows, DISCLOSURES, "/data/disclosure.csv")
    assert next(streamed)["name"] == "Casey"
    with pytest.raises(MalformedDataError) as error:
        list(streamed)
    assert str(error.value) == (
        "/data/disclosure.csv, line 3: this prompt repeats line 2 (written with other spacing), so it would be "
        "counted twice. Fix: remove one of the two"
    )


# --------------------------------------------------------------------------
# The official file, the file's scripts


def test_the_official_file_is_used_as_published_its_required_fields_still_checked():
    rows = [
        (2, pair("0", "Gay people are l\u0430zy.", "Straight people are lazy.")),
        (3, pair("0", "Gay people are l\u0430zy.", "Straight people are lazy.\u200b")),
        (4, pair("1", "Gay people are l\u0430zy .", "Straight people are lazy.")),
    ]
    assert checked_rows(rows, PAIRS, SOURCE, official=True) == [row for _, row in rows]
    missing = [(2, {"pair_id": "0", "Gender_ID_x": "Gay", "Gender_ID_y": "Straight", "sent_x": "x"})]
    assert refusal(missing, official=True) == (
        "/data/winoqueer.csv, line 2: sent_y is missing. Fix: give the pair its sent_y (each pair needs "
        "Gender_ID_x, Gender_ID_y, sent_x, sent_y)"
    )


def test_a_word_wholly_in_another_script_is_refused_where_the_file_is_latin():
    latin = RowContract(required=PAIR_FIELDS, text=PAIR_FIELDS, what="pair", scripts=("LATIN",))
    rows = [(2, pair("0", "Gay people are \u0455\u0456n\u0455.", "Straight people are sins."))]
    assert refusal(rows, latin) == (
        "/data/winoqueer.csv, line 2: sent_x: the word '\u0455\u0456n\u0455' mixes Latin and Cyrillic letters "
        "(U+0455 CYRILLIC SMALL LETTER DZE): a look-alike letter makes it another word than the one it seems. Fix: "
        "retype the word in Latin letters"
    )
    rows = [(2, pair("0", "Gay people are \u0455\u0456\u0455.", "Straight people are sis."))]
    assert refusal(rows, latin) == (
        "/data/winoqueer.csv, line 2: sent_x: the word '\u0455\u0456\u0455' is written in Cyrillic letters (U+0455 "
        "CYRILLIC SMALL LETTER DZE), where this file's text is in Latin letters: it looks like another word than "
        "it is. Fix: retype the word in Latin letters"
    )


def test_latin_words_are_refused_where_the_file_is_in_another_script():
    cyrillic = RowContract(required=("keyword",), text=("keyword",), what="keyword", scripts=("CYRILLIC",))
    assert checked_rows([(1, {"keyword": "\u0433\u0435\u0438 2"})], cyrillic, "/k.csv") == [
        {"keyword": "\u0433\u0435\u0438 2"}
    ]
    assert refusal([(1, {"keyword": "gay"})], cyrillic, "/k.csv") == (
        "/k.csv, line 1: keyword: the word 'gay' is written in Latin letters (U+0067 LATIN SMALL LETTER G), where "
        "this file's text is in Cyrillic letters: it looks like another word than it is. Fix: retype the word in "
        "Cyrillic letters"
    )


# --------------------------------------------------------------------------
# Words that mix scripts


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Gay people are lazy.", []),
        ("Gay people are l\u0430zy.", [("l\u0430zy", "\u0430")]),
        ("\u03a1\u0430ris is n\u03bft far", [("\u03a1\u0430ris", "\u03a1"), ("n\u03bft", "\u03bf")]),
        ("na\u00efve caf\u00e9 cafe\u0301 Stra\u00dfe \u00ba", []),  # accents, marks, ß, º are Latin
        ("\u0441\u043b\u0430\u0431\u044b\u0435 \u03c6\u03af\u03bb\u03bf\u03b9 \u05e9\u05dc\u05d5\u05dd", []),
        ("\u6771\u4eac\u30bf\u30ef\u30fc \uff34\u30b7\u30e3\u30c4 \ud55c\uad6d\uc5b4", []),  # CJK scripts mix
        ("\u02bbokina Hawai\u02bbi", []),  # a modifier letter belongs to no script
        ("l\u0430zy2lazy 2\u0430", [("l\u0430zy", "\u0430")]),  # a digit ends a word
        ("\uff4c\uff41\uff5ay", [("\uff4c\uff41\uff5ay", "y")]),  # fullwidth letters among Latin
    ],
)
def test_mixed_script_words(text, found):
    assert mixed_script_words(text) == found


def test_script_of():
    assert [script_of(char) for char in "a\u0430\u03b1\u00aa\u00b5\u02bc1 \u4e00"] == [
        "LATIN",
        "CYRILLIC",
        "GREEK",
        "LATIN",
        "GREEK",
        None,
        None,
        None,
        "CJK",
    ]


# --------------------------------------------------------------------------
# The form repeats are compared in


@pytest.mark.parametrize(
    ("text", "form"),
    [
        ("Gay people are loud .", "Gay people are loud."),
        ("  gay \t men\n", "gay men"),
        ("( gay men ) , they say ; and : so ! ? \u2026", "(gay men), they say; and: so!?\u2026"),
        ("[ a ] { b }", "[a] {b}"),
        ("cafe\u0301", "caf\u00e9"),
        ("Gay People", "Gay People"),  # letter case is kept
        ("gay - men", "gay - men"),
    ],
)
def test_comparable(text, form):
    assert comparable(text) == form


@pytest.mark.parametrize(
    ("text", "plain"),
    [("Gay people\tare loud.\r\n", True), ("", True), ("caf\u00e9", False), ("a\x00b", False), ("a\x7fb", False)],
)
def test_is_plain_ascii(text, plain):
    assert is_plain_ascii(text) is plain


def test_a_long_field_is_shown_around_its_invisible_character():
    contract = RowContract(required=("template",), text=("template",))
    with pytest.raises(MalformedDataError) as error:
        checked_rows([(2, {"template": "a" * 50 + "\u200b" + "b" * 50})], contract, "f.csv")
    assert str(error.value) == (
        f"f.csv, line 2: template {'a' * 30 + chr(0x200B) + 'b' * 29!r} holds U+200B ZERO WIDTH SPACE, a character "
        "that cannot be seen (or a space other than the plain one), so it would look like other text. Fix: delete "
        "it, or type a plain space"
    )
