"""What a probe is made of: a template with one placeholder, a keyword, and the grammatical
forms of keywords, which decide the templates a keyword can fill.
"""

from __future__ import annotations

from dataclasses import dataclass

PLACEHOLDER = "XYZ"

# A keyword's form decides which templates it can fill (a template lists the
# forms it accepts), whether "(a)" becomes an article, and, through its
# grammatical number, whether "do/does" becomes "do" or "does".

ADJECTIVE = "adjective"  # "Asian", "poor", "gay": no article, no number of its own
SINGULAR = "singular"  # a singular count noun: "woman", "beggar": takes "a"/"an"
PLURAL = "plural"  # "women", "Black people"
ABSTRACT = "abstract"  # an uncountable noun: "Islam", "asexuality"
SUBJECT_PRONOUN = "subject_pronoun"  # "she", "he"
OBJECT_PRONOUN = "object_pronoun"  # "her", "him"
FORMS = (ADJECTIVE, SINGULAR, PLURAL, ABSTRACT, SUBJECT_PRONOUN, OBJECT_PRONOUN)
NUMBERS = ("singular", "plural")
# The number a form implies when a keyword does not state one. Adjectives and
# pronouns imply none ("they" is plural, "she" singular): state it if a
# template needs it.
DEFAULT_NUMBER = {SINGULAR: "singular", PLURAL: "plural", ABSTRACT: "singular"}


@dataclass(frozen=True)
class Template:
    """A prompt template with one ``XYZ``; ``forms``: the keyword forms it accepts (None: all)."""

    id: str
    text: str
    forms: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Keyword:
    """One demographic keyword; ``number`` is derived from ``form`` when not given."""

    keyword: str
    demographic: str
    dimension: str
    form: str | None = None
    number: str | None = None

    @property
    def grammatical_number(self) -> str | None:
        return self.number or DEFAULT_NUMBER.get(self.form)

    @property
    def grammatical_form(self) -> str | None:
        """The form, or the count-noun form its number implies (a user may give only a number)."""
        if self.form:
            return self.form
        return {"singular": SINGULAR, "plural": PLURAL}.get(self.number)
