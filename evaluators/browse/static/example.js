// One example: its choices × every loaded model's scores, what it was built from, its group and its control siblings
// (same source_id / base / pair) side by side with the same models' predictions.

import {LoadError, shardOfParams, fmtNum, loadRows, loadRuns, mark, predText, runOf, shardById, shardParams} from "./data.js";
import {fill, h, hashFor, list} from "./dom.js";

const ALL_UP_TO = 24;   // without `models`, a shard with at most this many runs shows all of them
const MAX_GROUP = 200;

export function exampleView(ctx) {
  const site = ctx.site;
  const element = h("section", {class: "view example"});
  return {element, async update(params, live) {
    const shard = shardOfParams(site, params);
    const rows = await loadRows(shard);
    const id = params.get("id");
    const index = rows.rows.findIndex((r) => r.id === id);
    if (index < 0) throw new LoadError(`No example with id "${id}" in ${shard.probe}/${shard.variant}/${shard.split}`);
    let models = list(params, "models");
    if (!models.length) models = shard.runs.slice(0, shard.runs.length <= ALL_UP_TO ? undefined : 2).map((r) => r.label);
    for (const m of models) runOf(shard, m);
    const blocks = await loadRuns(shard, models);
    const siblings = await Promise.all(Object.entries(rows.rows[index].siblings || {}).map(async ([sid, at]) => {
      const other = shardById(site, sid);
      if (!other) return {missing: sid};
      const otherRows = await loadRows(other);
      const otherModels = models.filter((m) => other.runs.some((r) => r.label === m));
      return {shard: other, rows: otherRows, index: at, models: otherModels, blocks: await loadRuns(other, otherModels)};
    }));
    if (!live()) return;
    const row = rows.rows[index];
    const here = {shard, rows, index, models, blocks};
    const back = hashFor("examples", {...shardParams(site, shard), models});
    fill(element,
      h("p", {class: "crumbs"}, h("a", {href: back}, `← ${shard.probe} · ${shard.variant} · ${shard.split} examples`)),
      h("h2", {}, "Example ", h("code", {}, row.id)),
      h("p", {class: "stem-big"}, row.stem),
      meta(shard, row, index),
      h("h3", {}, shard.k > 0 ? "Choices and scores" : "Predictions"),
      scores(here),
      models.length < shard.runs.length ? h("p", {}, h("a", {class: "button",
        href: hashFor("example", {...shardParams(site, shard), id, models: shard.runs.map((r) => r.label)})},
      `Show all ${shard.runs.length} models`)) : "",
      built(row),
      group(site, here),
      siblings.length ? [h("h3", {}, "Controls and variants side by side"),
        h("div", {class: "side"}, card(site, here, false), siblings.map((s) => s.missing
          ? h("div", {class: "card", "data-testid": "sibling"}, `Shard ${s.missing} is not in this site`)
          : card(site, s, true)))] : "");
  }};
}

function meta(shard, row, index) {
  const items = [["dataset", `${shard.collection} · ${shard.probe} · ${shard.variant} · ${shard.split}`],
    ["row", `${index} of ${shard.n}`], ["gold", row.answer], ["template", row.template], ["group", row.group],
    ["source id", row.source_id], ["version", shard.version], ["fingerprint", shard.fingerprint], ["file", shard.data]];
  return h("dl", {class: "meta"}, items.filter(([, v]) => v != null && v !== "").flatMap(([k, v]) =>
    [h("dt", {}, k), h("dd", {class: k === "fingerprint" ? "mono" : null}, String(v))]));
}

// Choices (rows) × models (columns): the scores, the chosen choice marked; then each model's answer, ✓/✗, margin.
function scores({shard, rows, index, models, blocks}) {
  const row = rows.rows[index];
  const k = shard.k;
  const footer = [["prediction", (b) => predText(shard, rows, row, b.pred[index]) || "none"],
    ["right?", (b) => mark(b.correct[index])], ["margin", (b) => fmtNum(b.margin[index])]];
  const head = h("thead", {}, h("tr", {}, h("th", {scope: "col"}, k > 0 ? "choice" : ""),
    models.map((m) => h("th", {scope: "col"}, m))));
  const body = k > 0 ? h("tbody", {}, (row.choices || []).map((choice, c) => h("tr", {class: c === row.gold ? "gold-row" : null},
    h("th", {scope: "row"}, choice, c === row.gold ? h("span", {class: "tag"}, "gold") : ""),
    blocks.map((b) => {
      const chosen = b.pred[index] === c;
      return h("td", {class: `num${chosen ? " chosen" : ""}`, title: chosen ? "this model's answer" : null},
        fmtNum(b.scores[index * k + c]), chosen ? " ◀" : "");
    })))) : null;
  const foot = h(k > 0 ? "tfoot" : "tbody", {}, footer.map(([name, f]) => h("tr", {}, h("th", {scope: "row"}, name),
    blocks.map((b) => h("td", {class: name === "right?" ? `mark ${b.correct[index] === 1 ? "right" : "wrong"}`
      : name === "margin" ? "num" : null}, f(b))))));
  return h("div", {class: "scroll-x"}, h("table", {class: "scores"}, head, body, foot));
}

function value(v) {
  return typeof v === "string" ? v : JSON.stringify(v);
}

function built(row) {
  const args = Object.entries(row.args || {});
  const facts = row.facts || [];
  if (!args.length && !facts.length) return h("p", {class: "hint"}, "No args or facts recorded for this row.");
  return h("div", {class: "built"},
    args.length ? h("div", {}, h("h3", {}, "Args"), h("table", {class: "kv"}, h("tbody", {},
      args.map(([k, v]) => h("tr", {}, h("th", {scope: "row"}, k), h("td", {}, value(v))))))) : "",
    facts.length ? h("div", {}, h("h3", {}, "Facts"), h("ul", {class: "facts"}, facts.map((f) => h("li", {}, value(f))))) : "");
}

// Other rows of the same group (ParaRel: the same fact under every pattern; CALUM: the pair).
function group(site, {shard, rows, index, models, blocks}) {
  const g = rows.rows[index].group;
  if (g == null) return "";
  const members = [];
  rows.rows.forEach((r, i) => { if (r.group === g && i !== index) members.push(i); });
  return [h("h3", {}, `Group ${g}: ${members.length} other rows`),
    h("div", {class: "scroll-x"}, h("table", {class: "list"},
      h("thead", {}, h("tr", {}, ["#", "template", "stem", "gold", ...models].map((t) => h("th", {scope: "col"}, t)))),
      h("tbody", {}, members.slice(0, MAX_GROUP).map((i) => {
        const r = rows.rows[i];
        return h("tr", {}, h("td", {class: "num"}, String(i)), h("td", {}, r.template ?? ""),
          h("td", {}, h("a", {href: hashFor("example", {...shardParams(site, shard), id: r.id, models})}, r.stem)),
          h("td", {}, r.answer), blocks.map((b) => h("td", {class: `mark ${b.correct[i] === 1 ? "right" : "wrong"}`,
            title: predText(shard, rows, r, b.pred[i])}, mark(b.correct[i]))));
      }))))];
}

// One column of the side-by-side: a row of some shard with the models' predictions on it.
function card(site, {shard, rows, index, models, blocks}, sibling) {
  const row = rows.rows[index];
  const href = hashFor("example", {...shardParams(site, shard), id: row.id, models});
  return h("div", {class: `card${sibling ? "" : " this"}`, "data-testid": sibling ? "sibling" : null, "data-variant": shard.variant},
    h("h4", {}, sibling ? h("a", {href}, `${shard.variant}`) : `${shard.variant} (this example)`,
      h("span", {class: "setting"}, ` ${shard.collection} · ${shard.split} · row ${index}`)),
    h("p", {class: "stem"}, row.stem),
    row.choices ? h("p", {}, "choices: ", row.choices.map((c, i) => [i ? " | " : "",
      i === row.gold ? h("strong", {}, c) : c])) : "",
    h("p", {}, "gold: ", h("strong", {}, row.answer)),
    models.length ? h("table", {class: "list card-preds"},
      h("colgroup", {}, h("col", {}), h("col", {class: "c-pred"}), h("col", {class: "c-mark"}), h("col", {class: "c-margin"})),
      h("tbody", {}, models.map((m, j) => {
        const p = predText(shard, rows, row, blocks[j].pred[index]) || "none";
        return h("tr", {}, h("th", {scope: "row", title: m}, m), h("td", {title: p}, p),
          h("td", {class: `mark ${blocks[j].correct[index] === 1 ? "right" : "wrong"}`}, mark(blocks[j].correct[index])),
          h("td", {class: "num", title: "margin"}, fmtNum(blocks[j].margin[index])));
      }))) : h("p", {class: "hint"}, "None of the models ran on it."));
}
