// The examples view: one shard's rows × the chosen models, filtered (right/wrong per model, template, answer, text),
// sorted by a model's margin, in a virtual table.

import {shardOfParams, fmtNum, loadRows, loadRuns, mark, predText, runOf, shardParams} from "./data.js";
import {h, hashFor, labelled, list, option} from "./dom.js";
import {VirtualTable} from "./table.js";

// Which models a URL names: `models`, else the shard's first two runs; then any named only by a filter or the sort.
export function chosenModels(shard, params) {
  let models = list(params, "models");
  if (!models.length) models = shard.runs.slice(0, 2).map((r) => r.label);
  const sort = parseSort(params.get("sort"));
  for (const m of [...list(params, "right"), ...list(params, "wrong"), ...(sort ? [sort.model] : [])]) {
    if (!models.includes(m)) models.push(m);
  }
  for (const m of models) runOf(shard, m);   // an unknown model is an error shown on the page
  return models;
}

function parseSort(value) {
  if (!value) return null;
  const parts = value.split(":");
  if (parts.length < 3 || parts[0] !== "margin") return null;
  return {model: parts.slice(1, -1).join(":"), dir: parts[parts.length - 1] === "desc" ? "desc" : "asc"};
}

export function selectShard(site, shard, navigate, route, extra = {}) {
  return labelled("Dataset", h("select", {onchange: (e) => {
    const next = site.shards[Number(e.target.value)];
    navigate(route, {...shardParams(site, next), ...extra});
  }}, site.shards.map((s, i) => option(String(i),
    `${s.collection} · ${s.probe} · ${s.variant} · ${s.split} (${s.n})`, s === shard))));
}

export function examplesView(ctx) {
  const site = ctx.site;
  const element = h("section", {class: "view examples"});
  let shard, rows, haystack, params, models, blocks, table;
  const state = () => ({
    ...shardParams(site, shard), models, right: list(params, "right"), wrong: list(params, "wrong"),
    template: params.get("template"), answer: params.get("answer"), q: params.get("q"), sort: params.get("sort"),
  });
  const go = (change, push = true) => ctx.navigate("examples", {...state(), ...change}, {push});

  const count = h("strong", {"data-testid": "row-count"});   // empty until the first count
  const total = h("span");
  const modelsBox = h("div", {class: "checks"});
  const modelsSummary = h("summary");
  const perModel = h("div", {class: "per-model"});
  const template = h("select", {onchange: (e) => go({template: e.target.value})});
  const answer = h("select", {onchange: (e) => go({answer: e.target.value})});
  const text = h("input", {type: "search", placeholder: "stem, choices or answer",
    oninput: () => { clearTimeout(text.timer); text.timer = setTimeout(() => go({q: text.value}, false), 150); }});
  const sort = h("select", {onchange: (e) => go({sort: e.target.value})});
  const compare = h("a", {class: "button"}, "Compare two models");
  const place = h("div", {class: "table-place"});

  function open(index) {
    ctx.navigate("example", {...shardParams(site, shard), id: rows.rows[index].id, models});
  }

  function build() {
    const values = (key) => [...new Set(rows.rows.map((r) => r[key]).filter((x) => x != null && x !== ""))]
      .map(String).sort((a, b) => a.localeCompare(b, undefined, {numeric: true}));
    template.replaceChildren(option("", "any"), ...values("template").map((t) => option(t)));
    answer.replaceChildren(option("", "any"), ...values("answer").map((t) => option(t)));
    modelsBox.replaceChildren(...shard.runs.map((r) => h("label", {class: "check"},
      h("input", {type: "checkbox", value: r.label, onchange: () => {
        const on = [...modelsBox.querySelectorAll("input:checked")].map((x) => x.value);
        const keep = (key) => list(params, key).filter((m) => on.includes(m));
        const s = parseSort(params.get("sort"));
        go({models: on, right: keep("right"), wrong: keep("wrong"), sort: s && on.includes(s.model) ? params.get("sort") : null});
      }}), ` ${r.label}`, r.setting ? h("span", {class: "setting"}, ` ${r.setting}`) : "")));
    element.replaceChildren(
      h("h2", {}, `Examples: ${shard.probe} · ${shard.variant} · ${shard.split}`),
      h("form", {class: "controls", onsubmit: (e) => e.preventDefault()},
        selectShard(site, shard, ctx.navigate, "examples"),
        h("details", {class: "models"}, modelsSummary, modelsBox),
        perModel,
        template.options.length > 1 ? labelled("Template", template) : "",
        labelled("Answer", answer),
        labelled("Text", text),
        labelled("Order", sort)),
      h("p", {class: "status"}, count, " ", total, " ", compare),
      place);
  }

  function syncControls() {
    const right = list(params, "right");
    const wrong = list(params, "wrong");
    modelsSummary.textContent = `Models: ${models.join(", ")}`;
    for (const box of modelsBox.querySelectorAll("input")) box.checked = models.includes(box.value);
    perModel.replaceChildren(...models.map((m) => labelled(`${m} answers`, h("select", {onchange: (e) => {
      const v = e.target.value;
      const others = (key) => list(params, key).filter((x) => x !== m);
      go({right: v === "right" ? [...others("right"), m] : others("right"),
        wrong: v === "wrong" ? [...others("wrong"), m] : others("wrong")});
    }}, option("", "right or wrong"), option("right", "right", right.includes(m)), option("wrong", "wrong", wrong.includes(m))),
    "field model-filter")));
    template.value = params.get("template") || "";
    answer.value = params.get("answer") || "";
    if (document.activeElement !== text) text.value = params.get("q") || "";
    sort.replaceChildren(option("", "file order"), ...models.flatMap((m) => [
      option(`margin:${m}:asc`, `margin of ${m}, lowest first`), option(`margin:${m}:desc`, `margin of ${m}, highest first`)]));
    sort.value = params.get("sort") || "";
    total.textContent = `of ${shard.n} examples`;
    compare.hidden = models.length < 2;
    if (models.length >= 2) compare.href = hashFor("compare", {...shardParams(site, shard), a: models[0], b: models[1]});
  }

  function filtered() {
    const want = [...list(params, "right").map((m) => [blocks[models.indexOf(m)].correct, 1]),
      ...list(params, "wrong").map((m) => [blocks[models.indexOf(m)].correct, 0])];
    const t = params.get("template");
    const a = params.get("answer");
    const q = (params.get("q") || "").toLowerCase();
    if (q && !haystack) {
      haystack = rows.rows.map((r) => [r.stem, ...(r.choices || []), r.answer].join("\n").toLowerCase());
    }
    const out = new Int32Array(shard.n);
    let m = 0;
    const all = rows.rows;
    for (let i = 0; i < shard.n; i++) {
      let ok = true;
      for (const [correct, v] of want) if (correct[i] !== v) { ok = false; break; }
      if (!ok) continue;
      if (t && String(all[i].template) !== t) continue;
      if (a && String(all[i].answer) !== a) continue;
      if (q && !haystack[i].includes(q)) continue;
      out[m++] = i;
    }
    const indices = out.slice(0, m);
    const s = parseSort(params.get("sort"));
    if (s) {
      const margin = blocks[models.indexOf(s.model)].margin;
      const sign = s.dir === "desc" ? -1 : 1;
      indices.sort((x, y) => {
        const mx = margin[x], my = margin[y];
        if (Number.isNaN(mx) || Number.isNaN(my)) return Number.isNaN(mx) - Number.isNaN(my) || x - y;
        return sign * (mx - my) || x - y;
      });
    }
    return indices;
  }

  function cells(index) {
    const r = rows.rows[index];
    const href = hashFor("example", {...shardParams(site, shard), id: r.id, models});
    const tds = [h("td", {class: "num idx"}, String(index)),
      h("td", {class: "stem", title: r.stem}, h("a", {href, tabIndex: -1}, r.stem))];
    if (shard.k > 0) tds.push(h("td", {class: "choices", title: (r.choices || []).join(" | ")}, (r.choices || []).join(" | ")));
    tds.push(h("td", {class: "gold", title: r.answer}, r.answer));
    for (const b of blocks) {
      const c = b.correct[index];
      const p = predText(shard, rows, r, b.pred[index]);
      tds.push(h("td", {class: "pred", title: p}, p), h("td", {class: `mark ${c === 1 ? "right" : c === 0 ? "wrong" : "none"}`,
        "aria-label": c === 1 ? "right" : c === 0 ? "wrong" : "no prediction"}, mark(c)),
      h("td", {class: "num margin"}, fmtNum(b.margin[index])));
    }
    return tds;
  }

  function cols() {
    return ["idx", "stem", ...(shard.k > 0 ? ["choices"] : []), "gold", ...models.flatMap(() => ["pred", "mark", "margin"])];
  }

  function head() {
    const base = ["#", "stem", ...(shard.k > 0 ? ["choices"] : []), "gold"];
    return [[{text: "", span: base.length}, ...models.map((m) => ({text: m, span: 3, cls: "model"}))],
      [...base.map((text) => ({text})), ...models.flatMap(() => [{text: "prediction"}, {text: "✓"}, {text: "margin"}])]];
  }

  return {element, destroy: () => table?.destroy(), async update(p, live) {
    params = p;
    if (!shard) {
      shard = shardOfParams(site, p);
      rows = await loadRows(shard);
      if (!live()) return;
      build();
    }
    models = chosenModels(shard, params);
    blocks = await loadRuns(shard, models);
    if (!live()) return;
    syncControls();
    const indices = filtered();
    count.textContent = String(indices.length);
    if (!table) {
      table = new VirtualTable({label: "Examples", head: head(), cols: cols(), cells, open});
      place.replaceChildren(table.element);
    } else {
      table.setHead(head(), cols());
    }
    table.setRows(indices);
  }};
}
