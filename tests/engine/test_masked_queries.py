"""The grouped masked-query encoding equals the per-statement one for every tokenizer family, whatever the
text around the mask (sentence start and end, glued punctuation, a clitic, double spaces)."""

import pytest
from transformers import AutoTokenizer

from evaluators.engine.masked_queries import context_key, encode_masked
from probekit.errors import DataError
from probekit.tokens.statements import encode_statements

SUBJECTS = ["Obama", "Marie Curie", "the old dog", "Zürich"]
PATTERNS = ["[MASK] was born in [X] .", "[X] was born in [MASK] .", "[X] was born in [MASK].",
            "[X] was born in [MASK]", "[X] lives in ([MASK]) now .", "[X] is the [MASK]'s friend .",
            "[X] likes  [MASK]  , twice .", "[X] , [MASK] , [X]"]
CHOICES = [["older", "younger", "Paris", "Rome", "dog"], ["dog", "cat"]]


def _queries(patterns):
    stems, choices, ids = [], [], []
    for p, pattern in enumerate(patterns):
        for s, subject in enumerate(SUBJECTS):
            for c, row in enumerate(CHOICES):
                stems.append(pattern.replace("[X]", subject))
                choices.append(row)
                ids.append(f"{p}-{s}-{c}")
    return stems, choices, ids


@pytest.fixture(params=["bert", "roberta", "bart", "t5"])
def tokenizer(request, tiny_bert, tiny_roberta, tiny_bart, tiny_t5):
    path = {"bert": tiny_bert, "roberta": tiny_roberta, "bart": tiny_bart, "t5": tiny_t5}[request.param]
    tok = AutoTokenizer.from_pretrained(path)
    if tok.mask_token is None:  # T5: any special token serves as the mask for the encoding
        tok.mask_token = "<extra_id_0>"
    return tok


def _usable(tokenizer, pattern: str) -> bool:
    """Whether the per-statement encoding accepts the pattern (a Unigram vocabulary may tokenize the glued
    punctuation around the mask differently per choice): if not, the grouped one must refuse it too."""
    try:
        for row in CHOICES:
            encode_statements(tokenizer, [pattern], [row], ["x"]).replaced(tokenizer.mask_token_id)
    except DataError:
        with pytest.raises(DataError, match="tokenized differently"):
            encode_masked(tokenizer, [pattern.replace("[X]", s) for s in SUBJECTS], [CHOICES[0]] * 4, list("abcd"))
        return False
    return True


def test_grouped_encoding_equals_the_per_statement_one(tokenizer):
    patterns = [p for p in PATTERNS if _usable(tokenizer, p)]
    assert len(patterns) >= len(PATTERNS) - 1
    stems, choices, ids = _queries(patterns)
    q = encode_masked(tokenizer, stems, choices, ids)
    contexts = {context_key(*p.split("[MASK]")) for p in patterns}  # patterns 1 and 7 share theirs
    assert len(q.tokens) == len(contexts) * len(CHOICES) < len(stems)  # one group per (context, choice list)
    for i in range(len(stems)):
        st = encode_statements(tokenizer, [stems[i]], [choices[i]], [ids[i]])
        inputs, positions = st.replaced(tokenizer.mask_token_id)
        assert q.inputs[i] == inputs[0] and q.positions[i] == positions[0]
        row = q.candidates()[i]
        assert row[row >= 0].tolist() == st.first.tolist()
        assert q.single[q.group[i]][:len(choices[i])].tolist() == st.single.tolist()
    lengths, words = q.longest()
    full = [max(len(x) for x in encode_statements(tokenizer, [s], [c], ["x"]).ids) for s, c in zip(stems, choices)]
    assert lengths.tolist() == full and words[0] in CHOICES[0]


def test_context_keys_reach_the_nearest_whitespace():
    assert context_key("Obama was born in ", " .") == (" ", False, " ", False)
    assert context_key("Obama was born in ", ".") == (" ", False, ".", True)
    assert context_key("Obama lives in (", ") now") == (" (", False, ") ", False)
    assert context_key("", " was born") == ("", True, " ", False)
    assert context_key("x  ", "'s friend") == ("  ", False, "'s ", False)


def test_given_token_ids_replace_the_choices_in_context_tokens_and_keep_the_input(tiny_roberta):
    """ParaRel's ``leading_space`` rule (the original's ``tokenize(" " + obj)``): the choices' tokens at the mask are
    given, RoBERTa's ``Ġolder`` also where the mask opens the sentence, each counted as one token; the masked input
    is the same as in context. In context the sentence start reads ``older`` and ``younger`` in pieces."""
    tok = AutoTokenizer.from_pretrained(tiny_roberta)
    stems, choices = ["[MASK] is older than me .", "I am [MASK] ."], [["older", "younger"]] * 2
    given = {w: tok.convert_tokens_to_ids("Ġ" + w) for w in ("older", "younger")}
    plain = encode_masked(tok, stems, choices, ["a", "b"])
    spaced = encode_masked(tok, stems, choices, ["a", "b"], given)
    assert spaced.inputs == plain.inputs and spaced.positions.tolist() == plain.positions.tolist()
    assert spaced.candidates().tolist() == [[given["older"], given["younger"]]] * 2 and spaced.single.all()
    assert plain.candidates()[0, 0] == tok.convert_tokens_to_ids("older") != given["older"]
    assert not plain.single[plain.group[0], 1] and plain.candidates()[1].tolist() == list(given.values())
    with pytest.raises(DataError, match=r"choices \['younger'\] have no token id"):
        encode_masked(tok, stems, choices, ["a", "b"], {"older": given["older"]})
