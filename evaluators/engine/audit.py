"""The tokenization audit: per dataset and tokenizer, how each answer word is encoded in context, which
examples mask-logit's single-token rule excludes (a choice that is not one token; candidates sharing their
first token, whose scores would tie), and the eligible examples, also intersected across models so that
their results can be compared on the same examples. Only tokenizers are needed.

Examples are keyed by their row position in the file (from 0) as well as their id: release files repeat ids.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import pandas as pd

from probekit.errors import DataError
from probekit.probes.templates import MASK
from probekit.tokens.statements import encode_statements

SHOWN_WORDS, SHOWN_EXCLUDED = 25, 20
INTRO = ("How each answer word is tokenized **in context** (the stem with the word in place of `[MASK]`), and which "
         "examples mask-logit's single-token rule excludes: a choice that is not exactly one token (*multi-token*), "
         "or candidates that share their first token (*tie*: their scores would be equal). **eligible for all "
         "models**: the examples every audited model can score, the set on which their results compare. Rows are "
         "positions in the file, from 0; the JSON beside this file lists the eligible rows and ids and every "
         "exclusion.")


def word_case(word: str) -> str:
    """``lower``, ``title``, ``upper``, ``mixed`` as written, or ``none`` (no cased letter)."""
    if word.lower() == word.upper():
        return "none"
    return next(name for name, test in (("lower", str.islower), ("upper", str.isupper), ("title", str.istitle),
                                        ("mixed", bool)) if test(word))


def lowercases(tokenizer) -> bool:
    """Whether the tokenizer lowercases its input (BERT uncased): ``Older`` is read as ``older``."""
    return tokenizer.tokenize("Older") == tokenizer.tokenize("older")


def leading_space(pieces: Sequence[str]) -> bool:
    """The word's first piece carries the space before it: ``Ġolder``, ``▁old``, or a lone space piece."""
    return bool(pieces) and (pieces[0][:1] in ("Ġ", "▁") or pieces[0].isspace())


def check_masked(label: str, examples: Sequence[Mapping]) -> None:
    """Every stem holds exactly one ``[MASK]``: the audit is of MC-MLM data (MC-QA stems have none)."""
    for row, e in enumerate(examples):
        n = e["question"]["stem"].count(MASK)
        if n != 1:
            raise DataError(f"{label}: row {row} (id {e['id']}): the stem has {n} {MASK} where the audit needs "
                            f"exactly one: it applies to MC-MLM data (MC-QA probes have no {MASK})")


def audit_examples(tokenizer, examples: Sequence[Mapping]) -> dict:
    """One tokenizer on one list of examples: the answer words' in-context encodings, the examples the
    single-token rule excludes (with reasons), the eligible rows and ids, and counts."""
    st = encode_statements(tokenizer, [e["question"]["stem"] for e in examples],
                           [[c["text"] for c in e["question"]["choices"]] for e in examples],
                           [e["id"] for e in examples])
    lower = lowercases(tokenizer)
    encodings: dict[str, Counter] = {}
    users: dict[str, set[int]] = {}
    excluded, eligible = [], []
    for i, e in enumerate(examples):
        multi, firsts = [], {}
        for row in st.rows_of(i):
            word, pieces = st.words[row], tuple(st.pieces(tokenizer, row))
            encodings.setdefault(word, Counter())[pieces, bool(st.single[row])] += 1
            users.setdefault(word, set()).add(i)
            if not st.single[row]:
                what = "multi-token" if len(pieces) > 1 else "not a whole token"
                multi.append(f"{what}: {word} -> [{', '.join(pieces)}]")
            firsts.setdefault(int(st.first[row]), []).append(word)
        ties = [f"tied first token: {', '.join(words)} -> {tokenizer.convert_ids_to_tokens(first)}"
                for first, words in firsts.items() if len(words) > 1]
        if multi or ties:
            excluded.append({"row": i, "id": e["id"], "kind": "multi-token" if multi else "tie",
                             "reasons": multi + ties})
        else:
            eligible.append(i)
    words = {w: {"case": word_case(w), "examples": len(users[w]),
                 "encodings": [{"pieces": list(p), "n_pieces": len(p), "leading_space": leading_space(p),
                                "single": single, "uses": n} for (p, single), n in counts.most_common()]}
             for w, counts in encodings.items()}
    kinds = Counter(x["kind"] for x in excluded)
    return {"lowercases": lower, "words": words, "excluded": excluded,
            "eligible": {"rows": eligible, "ids": [examples[i]["id"] for i in eligible]},
            "counts": {"examples": len(examples), "multi_token": kinds["multi-token"], "ties": kinds["tie"],
                       "eligible": len(eligible)}}


def audit(models: Mapping[str, object], datasets: Mapping[str, Sequence[Mapping]]) -> dict:
    """``{dataset: {examples, models: {model: audit_examples}, eligible_all: {n, rows, ids}}}``; every
    dataset is checked before any is tokenized."""
    for label, examples in datasets.items():
        check_masked(label, examples)
    result = {}
    for label, examples in datasets.items():
        per_model = {}
        for name, tokenizer in models.items():
            try:
                per_model[name] = audit_examples(tokenizer, examples)
            except DataError as exc:
                raise DataError(f"{label}: {name}: {exc}") from None
        rows = sorted(set.intersection(*(set(m["eligible"]["rows"]) for m in per_model.values())))
        result[label] = {"examples": len(examples), "models": per_model,
                         "eligible_all": {"n": len(rows), "rows": rows, "ids": [examples[i]["id"] for i in rows]}}
    return result


def _code(pieces: Sequence[str]) -> str:
    return " ".join(f"`{p}`" for p in pieces).replace("|", "\\|")


def _table(rows: list[dict]) -> str:
    return pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True)


def _word_rows(audited: dict) -> list[dict]:
    rows = []
    for word, w in audited["words"].items():
        enc = w["encodings"]
        spaces = {e["leading_space"] for e in enc}
        case = w["case"] + (" (lowercased)" if audited["lowercases"] and w["case"] not in ("lower", "none") else "")
        rows.append({"word": word.replace("|", "\\|"),
                     "pieces in context": "; ".join(f"{_code(e['pieces'])} ×{e['uses']}" for e in enc),
                     "#pieces": ", ".join(sorted({str(e["n_pieces"]) for e in enc})),
                     "leading space": "mixed" if len(spaces) > 1 else ("yes" if spaces.pop() else "no"),
                     "case": case, "examples": w["examples"],
                     "_ok": all(e["single"] for e in enc)})
    rows.sort(key=lambda r: (r["_ok"], -r["examples"], r["word"]))
    return rows


def markdown(result: Mapping, split: str) -> str:
    """The report: an overview, then per dataset its summary and per model the words and the exclusions."""
    lines = [f"# Tokenization audit ({split})", "",
             INTRO, "", "## Overview", ""]
    overview = [{"dataset": label, "model": name, "examples": d["examples"], **_summary(m, d)}
                for label, d in result.items() for name, m in d["models"].items()]
    lines += [_table(overview), ""]
    for label, d in result.items():
        lines += [f"## {label}", "", _table([{"model": name, "examples": d["examples"], **_summary(m, d)}
                                               for name, m in d["models"].items()]), ""]
        for name, m in d["models"].items():
            words = _word_rows(m)
            lines += [f"### {name}: answer words", "",
                      f"The tokenizer {'lowercases' if m['lowercases'] else 'keeps case'}.", "",
                      _table([{k: v for k, v in r.items() if k != "_ok"} for r in words[:SHOWN_WORDS]]), ""]
            if len(words) > SHOWN_WORDS:
                rest = words[SHOWN_WORDS:]
                lines += [(f"… and {len(rest)} more word(s), {sum(not r['_ok'] for r in rest)} of them not "
                           f"single tokens (all in the JSON)."), ""]
            ex = m["excluded"]
            lines += [f"### {name}: excluded examples ({len(ex)} of {d['examples']})", ""]
            if ex:
                lines += [_table([{"row": x["row"], "id": x["id"], "reason": "; ".join(x["reasons"])}
                                  for x in ex[:SHOWN_EXCLUDED]]), ""]
                if len(ex) > SHOWN_EXCLUDED:
                    lines += [f"First {SHOWN_EXCLUDED} shown; {len(ex)} excluded in all (all in the JSON).", ""]
            else:
                lines += ["None.", ""]
    return "\n".join(lines)


def _summary(m: Mapping, d: Mapping) -> dict:
    c = m["counts"]
    return {"excluded multi-token": c["multi_token"], "excluded ties": c["ties"], "eligible": c["eligible"],
            "eligible for all models": d["eligible_all"]["n"]}
