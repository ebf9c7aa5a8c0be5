// Two models compared on one shard: the right/wrong crosstab, McNemar's exact p and the paired 95% interval of the
// difference, all from pairs.bin (computed when the site was built); a cell lists its examples.

import {LoadError, shardOfParams, fmtNum, fmtPct, loadPair, loadRows, loadRuns, predText, runOf, shardParams} from "./data.js";
import {fill, h, hashFor, labelled, option} from "./dom.js";
import {selectShard} from "./examples.js";
import {VirtualTable} from "./table.js";

const CELLS = {RR: [1, 1], RW: [1, 0], WR: [0, 1], WW: [0, 0]};

const fmtP = (p) => (!Number.isFinite(p) ? "—" : p < 1e-4 ? p.toExponential(2) : p.toPrecision(3));

export function compareView(ctx) {
  const site = ctx.site;
  const element = h("section", {class: "view compare"});
  let table = null;
  return {element, destroy: () => table?.destroy(), async update(params, live) {
    const shard = shardOfParams(site, params);
    if (shard.runs.length < 2) throw new LoadError(`${shard.probe}/${shard.variant}/${shard.split} has one model: nothing to compare`);
    const a = params.get("a") || shard.runs[0].label;
    const b = params.get("b") || shard.runs.find((r) => r.label !== a).label;
    const ra = runOf(shard, a);
    const rb = runOf(shard, b);
    const cell = params.get("cell");
    if (cell && !(cell in CELLS)) throw new LoadError(`cell=${cell}: a cell is RR, RW, WR or WW`);
    const pair = shard.pairs ? await loadPair(shard, a, b) : null;
    const listed = cell ? await Promise.all([loadRows(shard), loadRuns(shard, [a, b])]) : null;
    if (!live()) return;
    const base = {...shardParams(site, shard), a, b};
    const go = (change) => ctx.navigate("compare", {...base, cell, ...change});
    const pick = (name, value) => h("select", {onchange: (e) => go({[name]: e.target.value})},
      shard.runs.map((r) => option(r.label, r.label, r.label === value)));
    const cellLink = (key, label) => {
      const count = pair ? String(Math.round(pair[key])) : "list";
      return h("td", {class: `cell${key === cell ? " open" : ""}`}, h("a", {href: hashFor("compare", {...base, cell: key}),
        "data-testid": "crosstab-cell", "data-cell": key, "aria-current": key === cell ? "true" : null},
      count, h("span", {class: "cell-label"}, ` ${label}`)));
    };
    table?.destroy();
    table = null;
    const listing = listed && cellList(site, shard, a, b, cell, listed, ctx.navigate);
    fill(element,
      h("h2", {}, `Compare on ${shard.probe} · ${shard.variant} · ${shard.split}`),
      h("form", {class: "controls", onsubmit: (e) => e.preventDefault()},
        selectShard(site, shard, ctx.navigate, "compare"), labelled("Model A", pick("a", a)), labelled("Model B", pick("b", b))),
      h("div", {class: "compare-grid"},
        h("table", {class: "crosstab"},
          h("caption", {}, "Rows where both models gave an answer"),
          h("thead", {}, h("tr", {}, h("td"), h("th", {scope: "col"}, `${b} right`), h("th", {scope: "col"}, `${b} wrong`))),
          h("tbody", {},
            h("tr", {}, h("th", {scope: "row"}, `${a} right`), cellLink("RR", "both right"), cellLink("RW", `only ${a}`)),
            h("tr", {}, h("th", {scope: "row"}, `${a} wrong`), cellLink("WR", `only ${b}`), cellLink("WW", "both wrong")))),
        h("dl", {class: "meta stats"},
          h("dt", {}, `accuracy ${a}`), h("dd", {}, `${fmtPct(ra.accuracy)}% [${fmtPct(ra.low)}, ${fmtPct(ra.high)}]`),
          h("dt", {}, `accuracy ${b}`), h("dd", {}, `${fmtPct(rb.accuracy)}% [${fmtPct(rb.low)}, ${fmtPct(rb.high)}]`),
          pair ? [h("dt", {}, `difference ${a} − ${b}`),
            h("dd", {"data-testid": "difference"}, `${fmtNum(100 * pair.diff, 1)} points, paired 95% interval [${fmtNum(100 * pair.low, 1)}, ${fmtNum(100 * pair.high, 1)}]`),
            h("dt", {}, "McNemar's exact p"), h("dd", {}, h("span", {"data-testid": "mcnemar-p"}, fmtP(pair.p)))]
            : [h("dt", {}, "statistics"), h("dd", {}, "not written for this shard (no pairs.bin: too many runs)")])),
      listing ? listing.section : h("p", {class: "hint"}, "Pick a cell to list its examples."));
    if (listing) (table = listing.table).setRows(listing.indices);
  }};
}

function cellList(site, shard, a, b, cell, [rows, [ba, bb]], navigate) {
  const [wa, wb] = CELLS[cell];
  const out = [];
  for (let i = 0; i < shard.n; i++) if (ba.correct[i] === wa && bb.correct[i] === wb) out.push(i);
  const open = (i) => navigate("example", {...shardParams(site, shard), id: rows.rows[i].id, models: [a, b]});
  const cells = (i) => {
    const r = rows.rows[i];
    return [h("td", {class: "num idx"}, String(i)),
      h("td", {class: "stem", title: r.stem}, h("a", {href: hashFor("example", {...shardParams(site, shard), id: r.id, models: [a, b]}), tabIndex: -1}, r.stem)),
      h("td", {class: "gold"}, r.answer),
      h("td", {class: "pred"}, predText(shard, rows, r, ba.pred[i])), h("td", {class: "num margin"}, fmtNum(ba.margin[i])),
      h("td", {class: "pred"}, predText(shard, rows, r, bb.pred[i])), h("td", {class: "num margin"}, fmtNum(bb.margin[i]))];
  };
  const table = new VirtualTable({label: `Examples in cell ${cell}`, cells, open,
    cols: ["idx", "stem", "gold", "pred", "margin", "pred", "margin"], head: [
    [{text: "", span: 3}, {text: a, span: 2, cls: "model"}, {text: b, span: 2, cls: "model"}],
    [{text: "#"}, {text: "stem"}, {text: "gold"}, {text: "prediction"}, {text: "margin"}, {text: "prediction"}, {text: "margin"}]]});
  const section = h("section", {class: "cell-list"}, h("h3", {}, h("strong", {"data-testid": "row-count"}, String(out.length)),
    ` examples in ${cell}`), table.element);
  return {section, table, indices: Int32Array.from(out)};
}
