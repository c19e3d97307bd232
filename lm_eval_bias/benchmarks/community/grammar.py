"""Grammar rules: "(a)" and "do/does" in templates, resolved for each keyword."""

from __future__ import annotations

import re

from lm_eval_bias.benchmarks.community.probes import (
    PLACEHOLDER,
    SINGULAR,
    Keyword,
    Template,
)

# Words spelled with a vowel but spoken with a consonant sound ("a European").
CONSONANT_SOUND_PREFIXES = (
    "eu",
    "ewe",
    "one-",
    "once",
    "ubiq",
    "ufo",
    "ugand",
    "ukr",
    "unic",
    "unif",
    "unil",
    "unio",
    "uniq",
    "unis",
    "unit",
    "univ",
    "ura",
    "uro",
    "use",
    "usu",
    "uten",
    "uti",
)
# Words spelled with a consonant but spoken with a vowel sound (silent h: "an honest").
VOWEL_SOUND_PREFIXES = ("heir", "honest", "honor", "honour", "hour")
# Initialisms are spelled out letter by letter ("an LGBTQ person"): these letters'
# names start with a vowel sound (ay, ee, ef, aitch, eye, el, em, en, oh, ar, es, ex).
VOWEL_SOUND_LETTERS = frozenset("AEFHILMNORSX")


def _is_initialism(word: str) -> bool:
    """An all-capitals word is read letter by letter when it has at most 3 letters
    ("FBI", "HIV", "POC") or no vowel among its first two ("LGBTQ", "LGBTQIA+", "NB").

    Others are read as words ("NASA", "BIPOC", "AAPI"), which the ordinary rule
    handles. (A word like "SWERF", said as one syllable, would be misread as letters.)
    """
    letters = re.sub(r"[^A-Za-z]", "", word)
    if len(letters) < 2 or not letters.isupper():
        return False
    return len(letters) <= 3 or not re.search(r"[AEIOU]", letters[:2])


def indefinite_article(phrase: str) -> tuple[str, str]:
    """``("a" | "an", reason)`` for a phrase, by the sound of its first word.

    Rules, first match wins: an initialism by its first letter's name
    ("an LGBTQ"); a number by how it is read ("an 8", "an 18"); a listed
    exception (silent h: "an honest"; vowel letter, consonant sound: "a
    European", "a unicorn"); otherwise by the first letter ("a heterosexual",
    "an asexual").
    """
    words = phrase.strip().split()
    if not words:
        raise ValueError("an article needs a non-empty phrase")
    word = words[0].strip("\"'“”‘’([{")
    lower = word.lower()
    if _is_initialism(word):
        first = re.sub(r"[^A-Za-z]", "", word)[0]
        return (
            ("an", f"initialism read as letters, '{first}' sounds like a vowel")
            if first in VOWEL_SOUND_LETTERS
            else ("a", f"initialism read as letters, '{first}' sounds like a consonant")
        )
    digits = re.match(r"\d+", word)
    if digits:
        number = digits.group()
        vowel = number.startswith("8") or (len(number) in (2, 5) and number[:2] in ("11", "18"))
        return ("an", "number read with a vowel sound") if vowel else ("a", "number read with a consonant sound")
    if lower.startswith(VOWEL_SOUND_PREFIXES):
        return "an", "exception: silent h"
    if lower == "one" or lower.startswith(CONSONANT_SOUND_PREFIXES):
        return "a", "exception: vowel letter with a consonant sound"
    if lower[:1] in "aeiou":
        return "an", "vowel sound"
    return "a", "consonant sound"


# Verb slots "singular/plural" or "plural/singular", resolved by the keyword's number.
AGREEMENT_SLOTS = {
    "do/does": ("does", "do"),
    "is/are": ("is", "are"),
    "was/were": ("was", "were"),
    "has/have": ("has", "have"),
}
_AGREEMENT_RE = re.compile(
    r"\b("
    + "|".join(re.escape(slot) + "|" + re.escape("/".join(reversed(slot.split("/")))) for slot in AGREEMENT_SLOTS)
    + r")\b",
    re.IGNORECASE,
)
_ARTICLE_RE = re.compile(r"\((a|A)\) ")


def _agreement_forms(slot: str) -> tuple[str, str]:
    first, second = slot.lower().split("/")
    key = f"{first}/{second}" if f"{first}/{second}" in AGREEMENT_SLOTS else f"{second}/{first}"
    return AGREEMENT_SLOTS[key]


def _match_case(word: str, like: str) -> str:
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def template_problems(text: str) -> list[str]:
    """Why a template text cannot be used (empty list: it can)."""
    problems = []
    if text.count(PLACEHOLDER) != 1:
        problems.append(f"needs exactly one {PLACEHOLDER}, has {text.count(PLACEHOLDER)}")
    articles = re.findall(r"\([aA]\)", text)
    if len(articles) > 1:
        problems.append("has more than one (a)")
    elif articles and not re.search(r"\([aA]\) " + PLACEHOLDER, text):
        problems.append(f"(a) must stand directly before {PLACEHOLDER}, as in '(a) {PLACEHOLDER}'")
    return problems


def realise(template: Template, keyword: Keyword) -> dict:
    """Fill one template with one keyword: the prompt and the rules applied.

    ``(a)`` becomes "a"/"an" (see :func:`indefinite_article`) before a
    singular count noun and disappears otherwise; ``do/does`` (and is/are,
    was/were, has/have) follows the keyword's grammatical number. A slot whose
    rule needs a form or number the keyword lacks is a ``ValueError``.
    """
    text = template.text
    form, number = keyword.grammatical_form, keyword.grammatical_number
    article_rule = agreement_rule = ""
    slot = _ARTICLE_RE.search(text)
    if slot:
        if form is None:
            raise ValueError(f"template {template.id} has (a): keyword {keyword.keyword!r} needs a form or number")
        if form == SINGULAR:
            article, reason = indefinite_article(keyword.keyword)
            text = text[: slot.start()] + _match_case(article, slot.group(1)) + " " + text[slot.end() :]
            article_rule = f"(a) -> {article} ({reason})"
        else:
            text = text[: slot.start()] + text[slot.end() :]
            article_rule = f"(a) -> none ({form})"
    agreements = []
    for match in _AGREEMENT_RE.finditer(text):
        if number is None:
            raise ValueError(
                f"template {template.id} has {match.group()}: keyword {keyword.keyword!r} "
                "needs a grammatical number (singular or plural)"
            )
        singular, plural = _agreement_forms(match.group())
        chosen = singular if number == "singular" else plural
        agreements.append((match.span(), _match_case(chosen, match.group())))
        agreement_rule = (agreement_rule + "; " if agreement_rule else "") + f"{match.group()} -> {chosen} ({number})"
    for (start, end), word in reversed(agreements):
        text = text[:start] + word + text[end:]
    return {
        "prompt": text.replace(PLACEHOLDER, keyword.keyword),
        "article_rule": article_rule,
        "agreement_rule": agreement_rule,
    }
