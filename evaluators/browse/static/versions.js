// The versions view: what a dataset diff (`probes diff --examples`) changed per split, old → new text, each changed
// or added example linked to its example view when its new row is in a shard of this site, and the flips it caused.
// Splits where nothing changed are listed on one line at the end.

import {loadRows, loadVersions, shardParams} from "./data.js";
import {fill, h, hashFor} from "./dom.js";

const MAX_LISTED = 500;

export function versionsView(ctx) {
  const site = ctx.site;
  const element = h("section", {class: "view versions"});
  return {element, async update(params, live) {
    const v = await loadVersions();
    const splits = v.splits || [];
    const quiet = splits.filter(unchanged);
    const listed = splits.filter((s) => !unchanged(s));
    const links = await Promise.all(listed.map((s) => exampleLinks(site, s)));
    if (!live()) return;
    fill(element, h("h2", {}, "Dataset versions"),
      h("p", {class: "hint"}, v.old != null || v.new != null
        ? `${v.old ?? "?"} → ${v.new ?? "?"} (from ${v.source})` : `from ${v.source} (probes diff --examples)`),
      listed.map((s, i) => versionSplit(s, links[i])),
      quiet.length ? h("p", {class: "unchanged", "data-testid": "versions-unchanged"},
        h("strong", {}, "unchanged: "), quiet.map((s) => `${s.config} · ${s.split}`).join(", ")) : "");
  }};
}

const flips = (e) => e.right_to_wrong || e.wrong_to_right || (e.flipped || []).length;
const unchanged = (s) => !s.added && !s.removed && !s.changed && !(s.examples || []).length && !(s.effects || []).some(flips);

// The shards that hold a split's rows: its probe and variant from the example (`dataset`, `variant`) or the config
// ("age_comparison-perturbed": probe age_comparison, variant perturbed; "age_comparison": the original).
function where(s, e) {
  const [probe, variant] = e.dataset && e.variant ? [e.dataset, e.variant] : splitConfig(s.config || "");
  return {probe, variant, split: e.split || s.split};
}

function splitConfig(config) {
  const at = config.search(/[-/]/);
  return at < 0 ? [config, "original"] : [config.slice(0, at), config.slice(at + 1)];
}

// key -> example view URL, for the split's changed/added examples whose new row id is in one of the site's shards.
async function exampleLinks(site, s) {
  const out = new Map();
  const wanted = (s.examples || []).slice(0, MAX_LISTED).filter((e) => e.status !== "removed" && e.new?.id != null);
  const byShard = new Map();
  for (const e of wanted) {
    const {probe, variant, split} = where(s, e);
    for (const shard of site.shards) {
      if (shard.probe !== probe || shard.variant !== variant || shard.split !== split) continue;
      if (!byShard.has(shard)) byShard.set(shard, []);
      byShard.get(shard).push(e);
    }
  }
  for (const [shard, examples] of byShard) {
    let ids;
    try {
      ids = new Set((await loadRows(shard)).rows.map((r) => r.id));
    } catch {
      continue;   // a missing shard file leaves its keys unlinked; the examples view reports the error itself
    }
    for (const e of examples) {
      if (!out.has(e.key) && ids.has(e.new.id)) out.set(e.key, hashFor("example", {...shardParams(site, shard), id: e.new.id}));
    }
  }
  return out;
}

// A dataset row's text for a field the diff names ("stem", "choices", "answer", "args", "question.stem", ...): the
// row's top level, then its question; choices as their texts joined by " | ", the answer as its choice's text; a field
// the row lacks: its stem.
export function fieldText(row, field) {
  if (row == null) return "";
  const name = (field || "").replace(/^question\./, "");
  const stem = () => text(get(row, "question.stem") ?? get(row, "stem") ?? row);
  if (!name) return stem();
  const choices = get(row, "choices") ?? get(row, "question.choices");
  if (name === "choices" && Array.isArray(choices)) return choices.map(choiceText).join(" | ");
  if (name === "answer" || name === "answerKey") {
    const key = row.answerKey ?? row.answer;
    const hit = Array.isArray(choices) ? choices.find((c) => c && typeof c === "object" && c.label === key) : null;
    if (hit) return choiceText(hit);
    if (key != null) return text(key);
  }
  const value = get(row, field) ?? get(row, `question.${name}`);
  return value === undefined ? stem() : text(value);
}

const choiceText = (c) => (c && typeof c === "object" ? text(c.text ?? c.label ?? c) : text(c));
const text = (x) => (typeof x === "string" ? x : JSON.stringify(x));

function get(row, dotted) {
  let x = row;
  for (const part of dotted.split(".")) x = x == null || typeof x !== "object" ? undefined : x[part];
  return x;
}

function versionSplit(s, links) {
  const examples = s.examples || [];
  const effects = s.effects || [];
  const key = (k) => (links.has(k) ? h("a", {href: links.get(k), title: "open this example"}, k) : k);
  return h("section", {class: "version-split", "data-testid": "version-split"},
    h("h3", {}, `${s.config} · ${s.split}`),
    h("p", {class: "counts"}, h("span", {class: "added"}, `${s.added} added`), " · ",
      h("span", {class: "removed"}, `${s.removed} removed`), " · ", h("span", {class: "changed"}, `${s.changed} changed`)),
    examples.length ? h("details", {open: examples.length <= 20},
      h("summary", {}, `Examples (${examples.length}${examples.length > MAX_LISTED ? `, the first ${MAX_LISTED} shown` : ""})`),
      h("div", {class: "scroll-x"}, h("table", {class: "list changes"},
        h("thead", {}, h("tr", {}, ["status", "key", "what", "field", "old", "new"].map((t) => h("th", {scope: "col"}, t)))),
        h("tbody", {}, examples.slice(0, MAX_LISTED).flatMap((e) => {
          const fields = e.fields && e.fields.length ? e.fields : [""];
          return fields.map((f, i) => h("tr", {class: e.status},
            i === 0 ? [h("td", {rowspan: fields.length}, e.status), h("td", {rowspan: fields.length, class: "key"}, key(e.key)),
              h("td", {rowspan: fields.length}, e.what || "")] : [],
            h("td", {}, f), h("td", {class: "old"}, fieldText(e.old, f)), h("td", {class: "new"}, fieldText(e.new, f))));
        }))))) : "",
    effects.map((eff) => h("details", {open: (eff.flipped || []).length <= 10},
      h("summary", {}, `${eff.model}: ${eff.right_to_wrong} right → wrong, ${eff.wrong_to_right} wrong → right`),
      (eff.flipped || []).length ? h("div", {class: "scroll-x"}, h("table", {class: "list"},
        h("thead", {}, h("tr", {}, ["key", "flip", "old prediction", "new prediction", "old gold", "new gold"]
          .map((t) => h("th", {scope: "col"}, t)))),
        h("tbody", {}, eff.flipped.slice(0, MAX_LISTED).map((f) => h("tr", {},
          h("td", {class: "key"}, key(f.key)), h("td", {}, f.flip), h("td", {}, f.old_prediction ?? ""),
          h("td", {}, f.new_prediction ?? ""), h("td", {}, f.gold_old ?? ""), h("td", {}, f.gold_new ?? "")))))) : "")));
}
