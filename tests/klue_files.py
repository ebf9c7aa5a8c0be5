"""Small KLUE release files (NLI and STS, the four ``klue-*-v1.1_<split>.json``) and KorNLI release files (the four
``KorNLI/*.ko.tsv``) in their documented formats, for the klue and kornli loaders' tests and CALUM's Korean
generator tests."""

from __future__ import annotations

import json

from probekit.sources.loaders import klue

NLI = {"train": [("힛걸 진심 최고다 그 어떤 히어로보다 멋지다", "힛걸 진심 최고로 멋지다.", "entailment"),
                 ("100분간 잘껄 그래도 소닉붐땜에 2점준다", "100분간 잤다.", "contradiction"),
                 ("100분간 잘껄 그래도 소닉붐땜에 2점준다", "소닉붐이 정말 멋있었다.", "neutral")],
       "dev": [("흡연자분들은 발코니가 있는 방이면 발코니에서 흡연이 가능합니다.", "어떤 방에서도 흡연은 금지됩니다.",
                "contradiction"),
               ("흡연자분들은 발코니가 있는 방이면 발코니에서 흡연이 가능합니다.", "발코니가 있는 방에서는 흡연이 가능합니다.",
                "entailment"),
               ("조금 더 깔끔하게 정리되면 좋겠어요.", "정리가 완벽하게 되어 있었다.", "neutral")]}


STS = {"train": [("숙소 위치는 찾기 쉽고 일반적인 한국의 반지하 숙소입니다.",
                  "숙박시설의 위치는 쉽게 찾을 수 있고 한국의 대표적인 반지하 숙박시설입니다.", 3.7, 1),
                  ("위반행위 조사 등을 거부·방해·기피한 자는 500만원 이하 과태료 부과 대상이다.",
                   "시민들 스스로 자발적인 예방 노력을 한 것은 아산 뿐만이 아니었다.", 0.0, 0)],
       "dev": [("무엇보다도 호스트분들이 너무 친절하셨습니다.", "무엇보다도, 호스트들은 매우 친절했습니다.", 4.9, 1),
               ("주요 관광지 모두 걸어서 이동가능합니다.", "위치는 피렌체 중심가까지 걸어서 이동 가능합니다.", 1.4, 0)]}


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


# KorNLI (kakaobrain/KorNLUDatasets, KorNLI/): per file, (sentence1, sentence2, gold_label) rows
KORNLI = {"multinli.train.ko.tsv": [("개념적으로 크림 스키밍은 제품과 지리라는 두 가지 기본 차원을 가지고 있다.",
                                     "제품과 지리학은 크림 스키밍을 작동시키는 것이다.", "neutral"),
                                    ("시즌 중에 알고 있는 거 알아? 네 레벨에서 다음 레벨로 잃어버리는 거야",
                                     "사람들이 기억하면 다음 수준으로 물건을 잃는다.", "entailment"),
                                    ("우리 번호 중 하나가 당신의 지시를 세밀하게 수행할 것이다.",
                                     "우리 팀의 한 멤버가 당신의 명령을 엄청나게 정확하게 실행할 것이다.", "entailment")],
          "snli_1.0_train.ko.tsv": [("말을 탄 사람이 고장난 비행기 위로 뛰어오른다.", "한 사람이 경쟁을 위해 말을 훈련시키고 있다.",
                                     "neutral"),
                                    ("말을 탄 사람이 고장난 비행기 위로 뛰어오른다.", "한 사람이 식당에서 오믈렛을 주문하고 있다.",
                                     "-"),
                                    ("말을 탄 사람이 고장난 비행기 위로 뛰어오른다.", "사람은 야외에서 말을 타고 있다.",
                                     "entailment")],
          "xnli.dev.ko.tsv": [("그리고 그가 말했다, \"엄마, 저 왔어요.\"", "그는 학교 버스가 그를 내려주자마자 엄마에게 전화를 걸었다.",
                               "neutral"),
                              ("그리고 그가 말했다, \"엄마, 저 왔어요.\"", "그는 한마디도 하지 않았다.", "contradiction")],
          "xnli.test.ko.tsv": [("글쎄, 나는 그것에 대해 생각조차 하지 않았지만, 너무 좌절해서 결국 그에게 다시 이야기하게 되었다.",
                                "나는 그와 다시 이야기하지 않았다.", "contradiction")]}


def write_kornli(folder, **replace) -> None:
    """The four KorNLI release files in ``folder`` as the release writes them (header ``sentence1 sentence2
    gold_label``, tab-separated, unquoted, a quote kept as is); ``replace``: file name -> text written instead."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in KORNLI.items():
        text = "sentence1\tsentence2\tgold_label\n" + "".join("\t".join(r) + "\n" for r in rows)
        (folder / name).write_text(replace.get(name, text), encoding="utf-8")
