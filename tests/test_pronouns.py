import pytest

from lm_eval_bias import pronouns


def family_of_first(text):
    match = pronouns.first_pronoun(text)
    return match.family if match else None


@pytest.mark.parametrize(
    "continuation,family",
    [
        (" She later moved to Paris.", "she"),
        (" Their second novel sold well.", "they"),
        (" The book made them famous.", "they"),
        (" Xe is also a painter.", "xe"),
        (" XIR work is known.", "xe"),
        (" He is also a painter.", "he"),
        # whole words only: "they" holds no "ey", "them" no "em", "where" no "he"
        (" Then they left.", "they"),
        (" Where were the others?", None),
        (" I showed them.", "they"),
        # a clitic is not a pronoun
        (" Get 'em all, said Sam. Ey laughed.", "ey"),
        (" They're leaving.", "they"),
        (" It was released in 2010 and she toured.", "other"),
        (" The song taught themselves nothing.", "they"),
        (" Ze wrote it.", "other"),
        (" Sam asked xem to stay.", "xe"),
        ("", None),
        (" A great day at the park.", None),
    ],
)
def test_first_pronoun_family(continuation, family):
    assert family_of_first(continuation) == family


def test_forms_and_determiners():
    (fae, again) = pronouns.find_pronouns("The fae was happy, and fae smiled.")
    assert (fae.word, fae.family, fae.is_nominative, fae.determiner) == ("fae", "fae", True, "the")
    assert again.determiner is None
    (her,) = pronouns.find_pronouns("I saw her")
    assert her.forms == ("accusative", "possessive_determiner")
    # punctuation between the determiner and the word breaks the pair
    assert pronouns.find_pronouns("the, xe")[0].determiner is None


def test_every_release_form_is_recognised_as_its_family():
    for family, forms in pronouns.FAMILY_FORMS.items():
        for word in forms:
            assert family_of_first(f"and then {word} went") == family


def test_groups():
    assert pronouns.family_group("xe") == ("neo", "tgnb")
    assert pronouns.family_group("they") == ("they", "tgnb")
    assert pronouns.family_group("he") == ("binary",)
