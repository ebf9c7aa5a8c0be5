"""WordNet's side of OBJECTS COMPARISON: which sized objects are animals (train), which are general objects
(dev) and which are neither, read from the ``wordnet.hypernyms`` table, with the synsets that may be each
object's first noun sense.
"""

from __future__ import annotations

from collections import defaultdict

from generators.objects_comparison.params import ObjectsParams

ANIMAL = "animal"


def _head(synset: str) -> str:
    """The lemma a synset is named after (``shepherd_dog.n.01`` -> ``shepherd_dog``)."""
    return synset.rsplit(".", 2)[0].lower()


def wordnet_domains(hypernyms, objects: set[str], params: ObjectsParams) -> dict[str, tuple[str, list[str]]]:
    """``{object: (domain, first_sense)}``: domain ``animal`` (train), ``object`` (dev), ``other`` (neither:
    an animal sense that does not count, or a first sense outside ``object_lexnames``) or ``unknown`` (not a
    WordNet noun); ``first_sense`` the synsets that may be the object's first noun sense."""
    h = hypernyms[["concept", "concept_synset", "hypernym_synset", "lexname"]]
    mine = h[h["concept"].isin(objects)]
    known = h[h["concept_synset"].isin(set(mine["concept_synset"]) | set(mine["hypernym_synset"]))]
    known = known.drop_duplicates("concept_synset")
    lexname = dict(zip(known["concept_synset"], known["lexname"]))  # the senses and their hypernyms'
    hyper: dict[str, set[str]] = defaultdict(set)
    senses: dict[str, set[str]] = defaultdict(set)
    for concept, synset, parent in zip(mine["concept"], mine["concept_synset"], mine["hypernym_synset"]):
        hyper[synset].add(parent)
        senses[concept].add(synset)

    def kind(synset: str) -> str:
        lex = lexname[synset]
        if lex == "noun.animal" and all(lexname.get(p, "noun.Tops") in ("noun.animal", "noun.Tops")
                                        for p in hyper[synset]):
            return ANIMAL
        return lex

    out = {}
    for obj in sorted(objects):
        if obj not in senses:
            out[obj] = ("unknown", [])
            continue
        synsets = sorted(senses[obj])
        key = obj.replace(" ", "_")
        named_first = [s for s in synsets if s.lower() == f"{key}.n.01"]
        if named_first:
            first = named_first
        else:  # sense 1 is named after another lemma: one of the synsets not named after this one
            first = [s for s in synsets if _head(s) != key] or synsets
        kinds, first_kinds = {kind(s) for s in synsets}, {kind(s) for s in first}
        is_animal = first_kinds == {ANIMAL} if params.animal_sense == "first" else ANIMAL in kinds
        if is_animal:
            out[obj] = (ANIMAL, first)
        elif ANIMAL not in kinds and first_kinds <= set(params.object_lexnames):
            out[obj] = ("object", first)
        else:
            out[obj] = ("other", first)
    return out
