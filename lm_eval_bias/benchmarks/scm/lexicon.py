"""The story vocabulary: function words left out, and the words labelled warmth or competence
(built in, or a user's ``scm_story_lexicon`` file).
"""

from __future__ import annotations

import csv
import functools

from lm_eval_bias import data

# Function words left out of the story vocabulary. spaCy's part-of-speech tagger (which the
# thesis used to keep nouns, adjectives and verbs) is not available offline; this list removes
# what such a filter would drop (articles, pronouns, auxiliaries, prepositions, conjunctions,
# and a few frequent adverbs), keeping content words.
STOPWORDS = frozenset(
    """
a an the this that these those there here it its itself i me my mine myself we us our ours
ourselves you your yours yourself yourselves he him his himself she her hers herself they them
their theirs themselves one ones someone something anyone anything everyone everything
no nothing nobody none who whom whose which what when where why how whoever whatever
and or but nor so yet if then than as because while although though unless until since
of to in on at by for with about against between into through during before after above below
from up down out off over under again further once upon within without toward towards across
along around among beyond onto per via
is am are was were be been being have has had having do does did doing done will would shall
should can could may might must ought let lets
not no yes very too also just only even still ever never always often really quite rather
much many more most less least few some any all each every both either neither other another
such same own so s t d ll m re ve don didn doesn isn aren wasn weren hasn haven hadn won wouldn
couldn shouldn can't cannot
like well back away now today yet already soon
""".split()
)

# The words labelled warmth or competence among a group's distinctive words: the 22 key terms,
# their inflections and derived forms, and a few close synonyms (our list, not the thesis's
# Nicolas et al. 2021 dictionary nor its embedding rule, which are not available offline;
# pass a fuller lexicon with scm_story_lexicon).
WARMTH_WORDS = frozenset(
    """
warm warmth warmly warmer warmest warmhearted warm-hearted tolerant tolerance tolerate tolerated
good-natured sincere sincerely sincerity friendly friendlier friendliest friendliness well-intentioned
trustworthy trust trusted trusting trustworthiness nice nicer nicest kind kinder kindest kindly
kindness kind-hearted kindhearted nurturing nurture nurtured nurtures nurturer understanding
caring compassionate compassion empathetic empathy empathic gentle gentleness generous generosity
honest honesty loyal loyalty loving affectionate supportive considerate sweet helpful sociable
agreeable cheerful welcoming thoughtful
""".split()
)
COMPETENCE_WORDS = frozenset(
    """
competent competence competently confident confidence confidently independent independence
independently competitive competitiveness compete competing intelligent intelligence intelligently
capable capability capabilities efficient efficiency efficiently skillful skilful skillfully skill
skills skilled able ability abilities assertive assertiveness assertively decisive decisiveness
decisively smart clever wise wisdom talented talent ambitious ambition determined determination
successful success rational knowledgeable knowledge expert expertise resourceful brilliant
leader leadership hardworking hard-working diligent driven accomplished
""".split()
)


@functools.lru_cache(maxsize=8)
def load_lexicon(path: str | None) -> tuple[frozenset, frozenset]:
    """(warmth words, competence words): the built-in lists, or a CSV of ``word,axis`` rows
    (axis ``warmth``/``competence``, or ``W``/``C``; a header row is allowed)."""
    if path is None:
        return WARMTH_WORDS, COMPETENCE_WORDS
    warmth, competence = set(), set()
    reader = csv.reader(data.open_text(path))
    for row in reader:
        line = reader.line_num
        if not row or not row[0].strip() or (line == 1 and row[0].strip().lower() == "word"):
            continue
        if len(row) < 2:
            raise data.MalformedDataError(f"{path}, line {line}: expected word,axis")
        axis = row[1].strip().lower()
        if axis in ("warmth", "w"):
            warmth.add(row[0].strip().lower())
        elif axis in ("competence", "c"):
            competence.add(row[0].strip().lower())
        else:
            raise data.MalformedDataError(f"{path}, line {line}: axis must be warmth or competence, got {row[1]!r}")
    both = sorted(warmth & competence)
    if both:
        raise data.MalformedDataError(
            f"{path}: {', '.join(map(repr, both[:5]))} listed as both warmth and competence; give each word one axis"
        )
    for axis, words in (("warmth", warmth), ("competence", competence)):
        if not words:
            raise data.MalformedDataError(
                f"{path}: no {axis} word; a lexicon needs rows 'word,{axis}' (and the "
                "other axis), or leave scm_story_lexicon out for the built-in lists"
            )
    return frozenset(warmth), frozenset(competence)
