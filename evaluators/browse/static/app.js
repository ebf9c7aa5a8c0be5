// probekit's results browser: a hash router over five views. The URL is the state: a control writes the hash
// (history.pushState / replaceState) and re-renders; a pasted URL, back/forward or hashchange renders the same view.

import {LoadError, fmtPct, loadSite, shardParams} from "./data.js";
import {fill, h, hashFor, parseHash} from "./dom.js";
import {examplesView} from "./examples.js";
import {exampleView} from "./example.js";
import {compareView} from "./compare.js";
import {versionsView} from "./versions.js";

const main = document.getElementById("main");
const errorBox = document.getElementById("error");
let site = null;
let shown = {key: null, view: null};
let generation = 0;
let rendered = null;

export function navigate(route, params, {push = true} = {}) {
  const url = hashFor(route, params);
  if (url === location.hash) return;
  history[push ? "pushState" : "replaceState"](null, "", url);
  render();
}

const ctx = {navigate, get site() { return site; }};

const routes = {
  overview: {key: () => "overview", make: overviewView},
  examples: {key: shardKey("examples"), make: examplesView},
  example: {key: shardKey("example"), make: exampleView},
  compare: {key: shardKey("compare"), make: compareView},
  versions: {key: () => "versions", make: versionsView},
};

function shardKey(route) {
  return (p) => [route, p.get("collection"), p.get("probe"), p.get("variant"), p.get("split")].join("\n");
}

export function showError(error) {
  errorBox.hidden = false;
  fill(errorBox, error instanceof Error ? error.message : String(error),
    site && location.hash.length > 2 ? [" · ", h("a", {href: "#/"}, "the overview")] : "");
}

async function render() {
  if (location.hash === rendered) return;
  rendered = location.hash;
  const gen = ++generation;
  const live = () => gen === generation;
  const {route, params} = parseHash();
  errorBox.hidden = true;
  try {
    if (!site) {
      site = await loadSite();
      header();
    }
    const spec = routes[route];
    if (!spec) throw new LoadError(`No page "#/${route}": the pages are ${Object.keys(routes).join(", ")}`);
    const key = spec.key(params);
    if (shown.key !== key) {
      shown.view?.destroy?.();
      shown = {key, view: spec.make(ctx)};
      main.replaceChildren(shown.view.element);
      main.setAttribute("aria-busy", "true");
    }
    for (const a of document.querySelectorAll("nav a")) {
      a.toggleAttribute("aria-current", a.dataset.route === route);
    }
    await shown.view.update(params, live);
  } catch (error) {
    if (!live()) return;
    showError(error);
    if (!site) main.replaceChildren();
  } finally {
    if (live()) main.removeAttribute("aria-busy");
  }
}

function header() {
  document.title = site.title || "probekit results";
  document.getElementById("title").textContent = document.title;
  const banner = document.getElementById("banner");
  banner.hidden = !site.banner;
  banner.textContent = site.banner || "";
  const first = site.shards[0];
  const pairs = site.shards.find((s) => s.pairs) || first;
  const nav = document.querySelector("nav ul");
  const link = (route, text, params = {}) => h("li", {}, h("a", {href: hashFor(route, params), "data-route": route}, text));
  fill(nav,
    link("overview", "Overview"),
    first && link("examples", "Examples", shardParams(site, first)),
    pairs && link("compare", "Compare", shardParams(site, pairs)),
    site.versions !== false && link("versions", "Versions"));
  const generated = document.getElementById("generated");
  generated.textContent = [site.generated_by, site.profile && `profile: ${site.profile}`].filter(Boolean).join(" · ");
}

// --- overview: runs × (probe, variant, split) per collection ---------------------------------------------------

function overviewView() {
  const element = h("section", {class: "view overview"});
  return {element, update() {
    fill(element, h("h2", {}, "Accuracy per model"),
      h("p", {class: "hint"}, "Accuracy (%) with its 95% bootstrap interval; ⚠ marks a run that always gives the same ",
        "answer. Each cell opens that model's examples."),
      ...collections().map(([name, shards]) => matrix(name, shards)));
  }};
}

function collections() {
  const out = new Map();
  for (const shard of site.shards) {
    if (!out.has(shard.collection)) out.set(shard.collection, []);
    out.get(shard.collection).push(shard);
  }
  return [...out];
}

function matrix(name, shards) {
  const labels = site.runs.filter((label) => shards.some((s) => s.runs.some((r) => r.label === label)));
  const probes = [];
  for (const s of shards) {
    const last = probes[probes.length - 1];
    if (last && last.probe === s.probe) last.span++;
    else probes.push({probe: s.probe, span: 1});
  }
  const baseLabels = [...new Set(shards.flatMap((s) => (s.baselines || []).map((b) => b.label)))];
  const refRow = (title, value) => h("tr", {class: "reference"}, h("th", {scope: "row"}, title),
    shards.map((s) => h("td", {class: "num"}, fmtPct(value(s)))));
  const cell = (shard, label) => {
    const run = shard.runs.find((r) => r.label === label);
    if (!run) return h("td", {class: "empty"}, "");
    const href = hashFor("examples", {...shardParams(site, shard), models: [label]});
    return h("td", {class: "num"}, h("a", {href, "data-testid": "overview-cell", "data-run": label,
      "data-probe": shard.probe, "data-variant": shard.variant, "data-split": shard.split,
      title: `${label} on ${shard.probe}/${shard.variant}/${shard.split}: ${run.correct} of ${run.n} right` +
        (run.setting ? ` (${run.setting})` : "") + (run.constant ? "; the run always gives the same answer" : "")},
    h("span", {class: "acc"}, fmtPct(run.accuracy)), run.constant ? h("span", {class: "warn", "aria-label": "constant answer"}, " ⚠") : "",
    h("span", {class: "ci"}, `${fmtPct(run.low)}–${fmtPct(run.high)}`)));
  };
  return h("section", {class: "collection"}, h("h3", {}, name),
    h("div", {class: "scroll-x"}, h("table", {class: "matrix"},
      h("thead", {},
        h("tr", {}, h("th", {rowspan: 2, scope: "col"}, "model"),
          probes.map((p) => h("th", {colspan: p.span > 1 ? p.span : null, scope: "colgroup"}, p.probe))),
        h("tr", {}, shards.map((s) => h("th", {scope: "col", class: "variant"}, s.variant,
          h("span", {class: "split"}, ` ${s.split}`))))),
      h("tbody", {}, labels.map((label) => h("tr", {}, h("th", {scope: "row"}, label),
        shards.map((s) => cell(s, label))))),
      h("tfoot", {},
        refRow("chance", (s) => s.chance),
        baseLabels.map((b) => refRow(b, (s) => (s.baselines || []).find((x) => x.label === b)?.value)),
        h("tr", {class: "reference"}, h("th", {scope: "row"}, "examples"),
          shards.map((s) => h("td", {class: "num"}, String(s.n))))))));
}

document.querySelector(".skip").addEventListener("click", (e) => { e.preventDefault(); main.focus(); });
window.addEventListener("hashchange", render);
window.addEventListener("popstate", render);
window.addEventListener("unhandledrejection", (e) => { showError(e.reason); e.preventDefault(); });
render();
