// A virtual table: a real <table>, of which only the rows in view are in the DOM (a fixed row height).
// The table sticks to the top of its scroll box; a sizer gives the box its scroll height (capped, so a million rows
// stay under the browser's largest element height: the scroll position then maps to a row proportionally).
// Keyboard: the body is focusable; ArrowUp/Down, PageUp/Down, Home/End move the current row, Enter opens it.

import {h} from "./dom.js";

export const ROW_H = 30;
// em; other columns share the rest. The stem is what a reader needs (a perturbed stem differs only in its middle):
// the choices, gold and each model's three columns stay narrow (ellipsis, the full text in a title), so that two
// models fit beside a wide stem at 1200 px.
const WIDTH = {idx: 3.5, choices: 9, gold: 6, pred: 7, mark: 1.8, margin: 4.8};
const REST = 26;   // em at least for the columns without a width (the stem)
const MAX_H = 4_000_000;

export class VirtualTable {
  // head: rows of header cells [[{text, span, cls}]]; cols: a class per column (its width, style.css);
  // cells(index) -> [td, ...]; open(index) opens a row.
  constructor({label, head, cols, cells, open}) {
    this.cells = cells;
    this.open = open;
    this.indices = new Int32Array(0);
    this.first = 0;
    this.current = -1;
    this.thead = h("thead");
    this.colgroup = h("colgroup");
    this.tbody = h("tbody", {tabIndex: 0, "aria-label": `${label}: use the arrow keys, Enter opens`,
      onkeydown: (e) => this.key(e), onfocus: () => this.current < 0 && this.indices.length && this.select(this.first)});
    this.table = h("table", {class: "vt-table", role: "grid", "aria-label": label, "aria-rowcount": 0},
      this.colgroup, this.thead, this.tbody);
    this.sizer = h("div", {class: "vt-sizer"}, this.table);
    this.element = h("div", {class: "vt"}, this.sizer);
    this.element.addEventListener("scroll", () => this.scrolled(), {passive: true});
    this.tbody.addEventListener("click", (e) => {
      const tr = e.target.closest("tr[data-pos]");
      if (tr && !e.target.closest("a")) this.select(Number(tr.dataset.pos));
    });
    this.tbody.addEventListener("dblclick", (e) => {
      const tr = e.target.closest("tr[data-pos]");
      if (tr) this.open(this.indices[Number(tr.dataset.pos)]);
    });
    this.resize = () => this.layout();
    window.addEventListener("resize", this.resize);
    this.setHead(head, cols);
  }

  destroy() { window.removeEventListener("resize", this.resize); }

  setHead(head, cols) {
    this.colgroup.replaceChildren(...cols.map((c) => h("col", {class: `c-${c}`, style: c in WIDTH ? `width: ${WIDTH[c]}em` : null})));
    const fixed = cols.reduce((sum, c) => sum + (WIDTH[c] || 0), 0);
    this.table.style.width = `max(100%, ${fixed + REST}em)`;
    this.thead.replaceChildren(...head.map((row) => h("tr", {},
      row.map((c) => h("th", {scope: "col", colspan: c.span > 1 ? c.span : null, class: c.cls || null,
        title: c.text || null}, c.text)))));
  }

  setRows(indices) {
    this.indices = indices;
    this.current = -1;
    this.table.setAttribute("aria-rowcount", String(indices.length));
    this.element.scrollTop = 0;
    this.first = 0;
    this.layout();
  }

  // Heights: the box fills the window below it; the sizer is the rows' height (capped) plus the header's.
  layout() {
    const top = this.element.getBoundingClientRect().top + window.scrollY;
    this.element.style.height = `${Math.max(240, window.innerHeight - top - 16)}px`;
    this.headH = this.thead.offsetHeight;
    this.bodyH = this.element.clientHeight - this.headH;
    this.fit = Math.max(1, Math.floor(this.bodyH / ROW_H));
    const n = this.indices.length;
    this.sizer.style.height = `${Math.min(n * ROW_H, MAX_H) + this.headH}px`;
    this.maxFirst = Math.max(0, n - this.fit);
    this.maxScroll = Math.max(0, this.sizer.offsetHeight - this.element.clientHeight);
    this.first = Math.min(this.first, this.maxFirst);
    this.draw();
  }

  scrolled() {
    if (this.element.scrollTop === this.expectTop) return;
    this.expectTop = null;
    const first = this.maxScroll > 0 ? Math.round((this.element.scrollTop / this.maxScroll) * this.maxFirst) : 0;
    if (first !== this.first) {
      this.first = first;
      cancelAnimationFrame(this.frame);
      this.frame = requestAnimationFrame(() => this.draw());
    }
  }

  draw() {
    const end = Math.min(this.indices.length, this.first + this.fit + 1);
    const trs = [];
    for (let pos = this.first; pos < end; pos++) {
      const selected = pos === this.current;
      trs.push(h("tr", {"data-testid": "example", "data-pos": pos, "data-index": this.indices[pos],
        "aria-rowindex": pos + 1, "aria-selected": selected ? "true" : "false", class: selected ? "current" : null},
      this.cells(this.indices[pos])));
    }
    this.tbody.replaceChildren(...trs);
  }

  // Make pos the current row, scrolled into view.
  select(pos) {
    const n = this.indices.length;
    if (!n) return;
    pos = Math.max(0, Math.min(n - 1, pos));
    this.current = pos;
    if (pos < this.first) this.first = pos;
    else if (pos >= this.first + this.fit) this.first = pos - this.fit + 1;
    this.first = Math.min(this.first, this.maxFirst);
    const top = this.maxFirst > 0 ? Math.round((this.first / this.maxFirst) * this.maxScroll) : 0;
    this.element.scrollTop = top;
    this.expectTop = this.element.scrollTop;
    this.draw();
  }

  key(e) {
    const moves = {ArrowDown: 1, ArrowUp: -1, PageDown: this.fit, PageUp: -this.fit};
    if (e.key in moves) this.select(this.current < 0 ? this.first : this.current + moves[e.key]);
    else if (e.key === "Home") this.select(0);
    else if (e.key === "End") this.select(this.indices.length - 1);
    else if (e.key === "Enter" && this.current >= 0) this.open(this.indices[this.current]);
    else return;
    e.preventDefault();
  }
}
