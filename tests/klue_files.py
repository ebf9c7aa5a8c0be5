"""Small KLUE release files (NLI and STS, the four ``klue-*-v1.1_<split>.json``) in their documented format, for
the KLUE loader's tests and CALUM's Korean generator tests."""

from __future__ import annotations

import json

from probekit.sources.loaders import klue

NLI = {"train": [("힛걸 진심 최고다 그 어떤 히어로보다 멋지다", "힛걸 진심 최고로 멋지다.", "entailment"),
                 ("100분간 잘껄 그래도 소닉붐땜에 2점준다", "100분간 잤다.", "contradiction"),
                 ("100분간 잘껄 그래도 소닉붐땜에 2점준다", "소닉붐이 정말 멋있었다.", "neutral")],
       "dev": [("흡연자분들은 발코니가 있는 방이면 발코니에서 흡연이 가능합니다.", "어떤 방에서도 흡연은 금지됩니다.",
                "contradiction")]}


STS = {"train": [("숙소 위치는 찾기 쉽고 일반적인 한국의 반지하 숙소입니다.",
                  "숙박시설의 위치는 쉽게 찾을 수 있고 한국의 대표적인 반지하 숙박시설입니다.", 3.7, 1),
                  ("위반행위 조사 등을 거부·방해·기피한 자는 500만원 이하 과태료 부과 대상이다.",
                   "시민들 스스로 자발적인 예방 노력을 한 것은 아산 뿐만이 아니었다.", 0.0, 0)],
       "dev": [("무엇보다도 호스트분들이 너무 친절하셨습니다.", "무엇보다도, 호스트들은 매우 친절했습니다.", 4.9, 1)]}


def nli_records(split: str) -> list[dict]:
    """NLI records as KLUE's release writes them (with the fields the loader does not read)."""
    return [{"guid": f"klue-nli-v1_{split}_{i:05d}", "genre": "NSMC", "premise": p, "hypothesis": h,
             "gold_label": y, "author": y, "label2": y, "label3": y, "label4": y, "label5": y}
            for i, (p, h, y) in enumerate(NLI[split])]


def sts_records(split: str) -> list[dict]:
    return [{"guid": f"klue-sts-v1_{split}_{i:05d}", "source": "airbnb-rtt", "sentence1": a, "sentence2": b,
             "labels": {"label": score, "real-label": score, "binary-label": binary},
             "annotations": {"agreement": "0:0:0:2:5:0", "annotators": ["07", "13"], "annotations": [3, 4]}}
            for i, (a, b, score, binary) in enumerate(STS[split])]


def write_release(folder, **replace) -> None:
    """The four KLUE release files in ``folder``; ``replace``: file stem -> records written instead."""
    folder.mkdir(parents=True, exist_ok=True)
    for task, records in (("nli", nli_records), ("sts", sts_records)):
        for split in klue.SPLITS:
            stem = f"klue-{task}-v1.1_{split}"
            data = replace.get(stem, records(split))
            (folder / f"{stem}.json").write_text(json.dumps(data, ensure_ascii=False, indent=4), encoding="utf-8")
