"""Our construction rules run over the original oLMpics release rows (read by the fidelity report,
:mod:`probekit.probes.fidelity`, by name, as it reads a generator's ``rule`` and ``release_problems``).

Each probe's generator enforces rules on what it writes: the number probes draw distinct values from the
split's range, balanced over the answers, with train and dev ranges apart; OBJECTS pairs objects a bucket gap
apart, animals in train and general objects in dev; ANTONYM NEGATION keeps one-word, frequent pairs with no
word in both splits, half antonyms within each part of speech; TAXONOMY CONJUNCTION keeps single-token
choices and uses a concept in few rows. The release rows carry no facts, so each check reads a row's stem
back through the probe's templates (:func:`parse`) and applies the rule with our params (those written in
our probe's ``meta.json``) and, for OBJECTS, our tables. :data:`CHECKS` maps a probe to its check, which
returns, per split, how many release rows break each rule (a row may break several).
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Mapping

from generators.shared import registry
from generators.antonym_negation.pairs import WORD, _edges, relation_of
from generators.objects_comparison.domains import wordnet_domains
from generators.objects_comparison.pairs import DOMAIN, _tables, candidates, make_plan
from probekit.data.examples import SPLITS, answer_text, example_problem
from probekit.errors import DataError
from probekit.probes.templates import SLOT, ProbeSpec, Template

log = logging.getLogger("probekit.fidelity")
NUMBER = r"(-?\d+)"
TEXT = r"(.+?)"
NO_TEMPLATE = "stem matches no template of the probe"


@dataclass(frozen=True)
class Context:
    """What a check knows of our construction: the probe's YAML, the variant compared with the release,
    its params (our ``meta.json``), and ``tables(names)``, our table sets (read on first use)."""

    spec: ProbeSpec
    variant: str
    params: Mapping
    tables: Callable[[tuple[str, ...]], Mapping]

    def params_model(self):
        """Our params as the generator's params class validates them."""
        return registry.get(self.spec.probe).params.model_validate(dict(self.params), context={"spec": self.spec})


def spec_of(probe: str) -> ProbeSpec:
    """The probe's YAML definition."""
    return registry.get(probe).probe_spec()


def _pattern(template: Template, slot: str) -> re.Pattern:
    """The template as a regular expression, each slot captured (``slot``: its pattern); a space may be
    several, or none before "," and "."; the final "." may be missing (the release writes "oldest " and
    "type of [MASK] " where the paper's templates end in " .")."""
    out, last = [], 0
    text = template.text.strip()
    final_stop = text.endswith(".")
    text = text[:-1].rstrip() if final_stop else text
    for m in SLOT.finditer(text):
        out += [re.escape(text[last:m.start()]), slot]
        last = m.end()
    out.append(re.escape(text[last:]))
    loose = re.sub(r"\\s\+(?=[.,])", r"\\s*", re.sub(r"(\\ )+", r"\\s+", "".join(out)))
    return re.compile(rf"\s*{loose}\s*" + (r"\.?\s*" if final_stop else ""))


def parse(spec: ProbeSpec, stem: str, slot: str = TEXT, templates: list[str] | None = None
          ) -> tuple[Template, dict[str, str]] | None:
    """The first template (of ``templates``, default all the probe's) whose text reads ``stem``, and its
    slot values; None when none does."""
    for tid in templates or list(spec.templates):
        template = spec.templates[tid]
        m = _pattern(template, slot).fullmatch(stem)
        if m:
            return template, dict(zip(template.slots, m.groups()))
    return None


def _compared_templates(ctx: Context) -> list[str]:
    """The compared variant's templates first, then the probe's others."""
    own = list(ctx.spec.variants[ctx.variant].templates)
    return own + [t for t in ctx.spec.templates if t not in own]


def _parsed_rows(rows: list[dict], ctx: Context, problems: Counter):
    """(row, (template, slots)) for each of ``rows`` whose stem one of the probe's templates reads (the compared
    variant's first); a row with no example problem that no template reads is counted under NO_TEMPLATE."""
    for row in rows:
        if example_problem(row):
            continue
        found = parse(ctx.spec, row["question"]["stem"], TEXT, _compared_templates(ctx))
        problems[NO_TEMPLATE] += found is None
        if found is not None:
            yield row, found


def unbalanced(golds: list[str], outcomes: int) -> int:
    """Rows beyond an even split of ``golds`` over ``outcomes`` answers (our generators balance them to one)."""
    if not golds:
        return 0
    cap = math.ceil(len(golds) / outcomes)
    return sum(max(0, c - cap) for c in Counter(golds).values())


def _in_both(keys: Mapping[str, list[set]], what: str, problems: Mapping[str, Counter]) -> None:
    """Per split, the rows one of whose ``keys`` also occurs in the other split."""
    for split, other in (("train", "dev"), ("dev", "train")):
        theirs = set().union(*keys.get(other, []))
        problems[split][f"{what} also in the other split"] += sum(bool(k & theirs) for k in keys.get(split, []))


def _repeated(keys: list, problems: Counter, what: str) -> None:
    counts = Counter(keys)
    problems[what] += sum(counts[k] > 1 for k in keys)


# --- AGE-COMPARISON, MULTI-HOP COMPARISON ------------------------------------------------------------


def numbers(rows_by_split: Mapping[str, list[dict]], ctx: Context) -> dict[str, Counter]:
    """The number probes' rules: values in our split's range, distinct within a row, the gold the values'
    outcome, no tuple twice, train and dev values apart, answers balanced."""
    outcome = registry.get(ctx.spec.probe).module.outcome  # age_comparison, multihop_comparison
    key = ctx.spec.variants[ctx.variant].options.get("values")
    ranges = ctx.params["values"][key]
    problems = {s: Counter() for s in SPLITS}
    values_of: dict[str, list[set]] = {}
    for split in SPLITS:
        p, tuples, golds, values_of[split] = problems[split], [], [], []
        low, high = ranges[split]
        for row in rows_by_split.get(split, []):
            if example_problem(row):
                continue
            found = parse(ctx.spec, row["question"]["stem"], NUMBER, _compared_templates(ctx))
            p[NO_TEMPLATE] += found is None
            if found is None:
                continue
            template, slots = found
            values = tuple(int(slots[s]) for s in template.slots)
            tuples.append(values)
            values_of[split].append(set(values))
            golds.append(answer_text(row))
            p[f"value outside our {split} range [{low}, {high}]"] += any(not low <= v <= high for v in values)
            repeated = len(set(values)) < len(values)
            p["a value repeated within the row"] += repeated
            p["gold is not the values' answer"] += not repeated and answer_text(row) != template.answers[
                outcome(values)]
        _repeated(tuples, p, "values repeated in another row (same tuple)")
        p["answers off an even split"] += unbalanced(golds, len(ctx.spec.template(_compared_templates(ctx)[0]).answers))
    _in_both(values_of, "a value", problems)
    return {s: dict(sorted(c.items())) for s, c in problems.items()}


# --- OBJECTS COMPARISON ------------------------------------------------------------------------------


def objects(rows_by_split: Mapping[str, list[dict]], ctx: Context) -> dict[str, Counter]:
    """OBJECTS COMPARISON's rules with our tables: each object usable in its split (a size in our tables,
    an animal in train, a general object in dev, by our WordNet rule), the pair ``min_gap`` buckets apart
    (``min_gap_fitted`` with a fitted size; with ``pairing: paper_literal``, in one bucket, of unequal
    sizes), the gold our sizes' answer, no direct label against them, no pair twice, no object in both
    splits, answers balanced."""
    params = ctx.params_model()
    tables = ctx.tables(("object_sizes", "wordnet"))
    plan = make_plan(tables, params)
    sizes, _, hypernyms = _tables(tables)
    sized = set(sizes["object"])
    parsed = {s: [] for s in SPLITS}
    for split in SPLITS:
        for row in rows_by_split.get(split, []):
            found = None if example_problem(row) else parse(ctx.spec, row["question"]["stem"], TEXT,
                                                             _compared_templates(ctx))
            parsed[split].append((row, found and (found[0], found[1]["obj1"], found[1]["obj2"])))
    names = {o for rows in parsed.values() for _, f in rows if f for o in f[1:]}
    domains = wordnet_domains(hypernyms, names & sized, params)
    problems = {s: Counter() for s in SPLITS}
    objs_of: dict[str, list[set]] = {}
    wanted = {"animal": "an animal", "object": "a general object"}
    pairing = (f"objects closer than our bucket gap ({params.min_gap}; {params.min_gap_fitted} with a fitted size)"
               if params.pairing == "ours" else "objects not in one bucket, or of one size (pairing: paper_literal)")
    for split in SPLITS:
        p, sp, pairs, golds, objs_of[split] = problems[split], plan.splits[split], [], [], []
        index = {n: i for i, n in enumerate(sp.names)}
        for row, found in parsed[split]:
            p[NO_TEMPLATE] += found is None and not example_problem(row)
            if found is None:
                continue
            template, a, b = found
            pairs.append((a, b))
            objs_of[split].append({a, b})
            golds.append(answer_text(row))
            missing = [o for o in (a, b) if o not in sp.objects]
            unsized = [o for o in missing if o not in sized]
            elsewhere = [o for o in missing if o in sized and domains[o][0] != DOMAIN[split]]
            p["an object without a size in our tables"] += bool(unsized)
            p[f"an object not {wanted[DOMAIN[split]]} (our WordNet rule)"] += bool(elsewhere)
            p["an object our params leave out (a fitted size with few labels)"] += len(missing) > len(unsized) + len(
                elsewhere)
            if missing:
                continue
            oa, ob = sp.objects[a], sp.objects[b]
            p[pairing] += not bool(candidates(params, oa.bucket, ob.bucket, oa.size_m, ob.size_m,
                                              oa.fitted or ob.fitted))
            words = {w: o for o, w in template.answers.items()}
            ours = "larger" if oa.size_m > ob.size_m else "smaller"
            p["gold is not our sizes' answer"] += oa.size_m != ob.size_m and words.get(answer_text(row)) != ours
            i, j = sorted((index[a], index[b]))
            p["a direct pair label disagrees with our sizes"] += j in sp.bad.get(i, ())
        _repeated(pairs, p, "pair repeated in another row (same order)")
        p["answers off an even split"] += unbalanced(golds, 2)
    _in_both(objs_of, "an object", problems)
    return {s: dict(sorted(c.items())) for s, c in problems.items()}


# --- ANTONYM NEGATION --------------------------------------------------------------------------------


def antonyms(rows_by_split: Mapping[str, list[dict]], ctx: Context) -> dict[str, Counter]:
    """ANTONYM NEGATION's rules: two different one-word lower-case words (``[a-z]{2,}``), both at least
    ``min_zipf`` (wordfreq); the pair an antonym or a synonym pair in our tables (the ``sources`` of our
    params: WordNet lemma pairs, ConceptNet edges), one relation, and the gold its answer; no word in both
    splits, no pair twice in one direction, antonyms and synonyms balanced within each part of speech (that
    of the template the stem reads as)."""
    from wordfreq import zipf_frequency

    min_zipf, sources = ctx.params["min_zipf"], list(ctx.params["sources"])
    by_pair = _edges(ctx.tables(tuple(sorted(set(sources) | {"wordnet"}))), sources, Counter())
    tables = f"our tables ({', '.join(sources)})"
    pos_of = {t: pos for v in ctx.spec.variants.values() for pos, ts in (v.options.get("pos") or {}).items()
              for t in ts}   # template -> the part of speech it serves (variant option ``pos``)
    problems = {s: Counter() for s in SPLITS}
    words_of: dict[str, list[set]] = {}
    for split in SPLITS:
        p, pairs, by_pos, words_of[split] = problems[split], [], {}, []
        for row, (template, slots) in _parsed_rows(rows_by_split.get(split, []), ctx, p):
            x, y = slots["x"], slots["y"]
            pairs.append((x, y))
            words_of[split].append({x, y})
            by_pos.setdefault(pos_of.get(template.id), []).append(answer_text(row))
            p["a word that is not one lower-case word of 2+ letters"] += not all(WORD.fullmatch(w) for w in (x, y))
            p["the same word twice"] += x == y
            p[f"a word below our min_zipf {min_zipf}"] += any(zipf_frequency(w, "en") < min_zipf for w in (x, y))
            relations = {relation_of(e) for e in by_pair.get(tuple(sorted((x, y))), ())}
            p[f"a pair {tables} do not hold"] += not relations
            p[f"a pair {tables} call both antonyms and synonyms"] += len(relations) > 1
            p[f"gold is not the answer of the pair's relation in {tables}"] += len(relations) == 1 and (
                answer_text(row) != template.answers[next(iter(relations))])
        _repeated(pairs, p, "pair repeated in another row (same order)")
        p["answers off an even split within a part of speech"] += sum(unbalanced(g, 2) for g in by_pos.values())
    _in_both(words_of, "a word", problems)
    return {s: dict(sorted(c.items())) for s, c in problems.items()}


# --- TAXONOMY CONJUNCTION ----------------------------------------------------------------------------


def _one_token(specs: list[str]):
    """TAXONOMY CONJUNCTION's single-token filter over ``specs`` (as our ``meta.json`` records them), or None
    (logged) without specs or when one cannot be loaded here (an alias of the params' models)."""
    from generators.shared.single_token import OneToken

    if not specs:
        return None
    one_token = OneToken(specs, "taxonomy_conjunction.single_token")
    try:
        one_token("thing")
    except DataError as exc:
        log.warning("fidelity: the single-token rule is not checked: %s", exc)
        return None
    return one_token


def taxonomy(rows_by_split: Mapping[str, list[dict]], ctx: Context) -> dict[str, Counter]:
    """TAXONOMY CONJUNCTION's rules: every choice one token for our ``single_token`` tokenizers, a concept
    of at most ``max_concept_words`` words in at most ``max_concept_uses`` rows, no concept in both splits."""
    specs = list(ctx.params.get("single_token") or [])
    one_token, tokens = _one_token(specs), f"a choice that is not one token for {', '.join(specs)}"
    words, uses = ctx.params["max_concept_words"], ctx.params["max_concept_uses"]
    problems = {s: Counter() for s in SPLITS}
    concepts_of: dict[str, list[set]] = {}
    for split in SPLITS:
        p, concepts_of[split] = problems[split], []
        for row, found in _parsed_rows(rows_by_split.get(split, []), ctx, p):
            concepts = {found[1]["x"], found[1]["y"]}
            concepts_of[split].append(concepts)
            p[f"a concept of more than {words} words"] += any(len(c.split()) > words for c in concepts)
            if one_token is not None:
                p[tokens] += not all(one_token(c["text"]) for c in row["question"]["choices"])
        counts = Counter(c for cs in concepts_of[split] for c in cs)
        p[f"a concept in more than {uses} rows"] += sum(any(counts[c] > uses for c in cs)
                                                        for cs in concepts_of[split])
    _in_both(concepts_of, "a concept", problems)
    return {s: dict(sorted(c.items())) for s, c in problems.items()}


CHECKS: dict[str, Callable[[Mapping[str, list[dict]], Context], dict[str, Counter]]] = {
    "age_comparison": numbers, "multihop_comparison": numbers, "objects_comparison": objects,
    "antonym_negation": antonyms, "taxonomy_conjunction": taxonomy}
"""The probes whose rules are run over the release (the others: the generic rules and, where the generator
has one, its ``release_problems``)."""
