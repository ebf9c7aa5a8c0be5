// Small DOM and URL helpers: h() builds elements, the hash holds the page's state.

const PROPS = new Set(["value", "checked", "selected", "tabIndex", "disabled", "hidden", "open"]);

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  const props = [];
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (PROPS.has(k)) props.push([k, v]);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  add(el, children);
  for (const [k, v] of props) el[k] = v;
  return el;
}

// Replace el's children; arrays nest freely, null/false are skipped.
export function fill(el, ...children) {
  el.replaceChildren();
  add(el, children);
  return el;
}

function add(el, children) {
  for (const child of children) {
    if (child == null || child === false) continue;
    if (Array.isArray(child)) add(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

export function option(value, text, selected) {
  return h("option", {value, selected: selected || false}, text ?? value);
}

// A labelled control: <label>text <control></label>.
export const labelled = (text, control, cls) => h("label", {class: cls || "field"}, h("span", {}, text), control);

// "#/route?k=v&..." <-> {route, params: URLSearchParams}. Lists are comma separated (models=A,B).
export function parseHash(hash = location.hash) {
  const raw = hash.replace(/^#\/?/, "");
  const at = raw.indexOf("?");
  const route = (at < 0 ? raw : raw.slice(0, at)) || "overview";
  return {route, params: new URLSearchParams(at < 0 ? "" : raw.slice(at + 1))};
}

const enc = (s) => encodeURIComponent(s).replace(/%2C/g, ",").replace(/%3A/g, ":").replace(/%2F/g, "/");

export function hashFor(route, params) {
  const parts = [];
  for (const [k, v] of Object.entries(params)) {
    if (v == null || v === "" || (Array.isArray(v) && !v.length)) continue;
    parts.push(`${enc(k)}=${Array.isArray(v) ? v.map(enc).join(",") : enc(v)}`);
  }
  return `#/${route}${parts.length ? "?" + parts.join("&") : ""}`;
}

export const list = (params, key) => (params.get(key) || "").split(",").filter(Boolean);

export const paramsObject = (params) => Object.fromEntries(params.entries());
