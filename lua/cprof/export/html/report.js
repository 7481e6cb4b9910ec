// cprof's HTML report: draws the document that cprof.export.html embeds (docs/EXPORTS.md, "html").
// Every text of the profile goes into the page through textContent or an attribute, never as
// markup: a function may be named "<script>".  Nothing is fetched (the page's Content-Security-
// Policy forbids it): the data is in the page.
"use strict";
(function () {
const D = JSON.parse(document.getElementById("cprof-data").textContent);
const $ = id => document.getElementById(id);
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}
function clear(e) { e.replaceChildren(); return e; }
function button(text, cls, onclick) {
  const b = el("button", cls, text);
  b.type = "button";
  b.addEventListener("click", onclick);
  return b;
}

// ---- numbers as people read them

function grouped(x) { return Math.round(x).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
function seconds(x) {
  const a = Math.abs(x);
  if (a >= 1) return x.toFixed(3) + " s";
  if (a >= 1e-3) return (x * 1e3).toFixed(3) + " ms";
  if (a >= 1e-6) return (x * 1e6).toFixed(3) + " \u00b5s";
  return (x * 1e9).toFixed(0) + " ns";
}
function bytes(x) {
  const a = Math.abs(x);
  if (a >= 1073741824) return (x / 1073741824).toFixed(2) + " GiB";
  if (a >= 1048576) return (x / 1048576).toFixed(2) + " MiB";
  if (a >= 1024) return (x / 1024).toFixed(2) + " KiB";
  return grouped(x) + " B";
}
// "1 call", "2 calls": a count with the noun of its unit
function count(x, unit) { return grouped(x) + " " + (Math.abs(x) === 1 ? unit.replace(/s$/, "") : unit); }
// A value of a weight's unit (cprof.export.model's WEIGHTS; time comes in nanoseconds)
function amount(unit, x) {
  if (unit === "nanoseconds") return seconds(x * 1e-9);
  if (unit === "bytes") return bytes(x);
  return count(x, unit);
}
function pct(x) { return (Math.abs(x) < 0.1 && x !== 0 ? x.toFixed(2) : x.toFixed(1)) + "%"; }
// pstats' ncalls column: "calls" or "calls/primitive calls"
function calls(nc, pc) { return pc === null || pc === undefined || pc === nc ? String(nc) : nc + "/" + pc; }
// nanoseconds as pstats prints seconds
const f3 = x => x === null || x === undefined ? "" : (x / 1e9).toFixed(3);

// ---- the functions (frames) and the call tree (nodes)

const F = D.frames, nf = F.short.length;
// a frame's name and label: where they differ from its short name and from its row's name, the
// document gives them
const fname = f => F.fn[f] ?? F.short[f];
const LABEL = F.short.map((_, f) => F.label[f] ?? D.table.names[F.row[f]]);
const label = f => LABEL[f];
const where = f => F.file[f] < 0 ? null : D.files[F.file[f]] + ":" + F.line[f];
const T = D.tree, n = T ? T.up.length : 0;
const parent = new Int32Array(n + 1), frame = new Int32Array(n + 1);
for (let k = 1; k <= n; k++) { parent[k] = k - T.up[k - 1]; frame[k] = T.frame[k - 1]; }
const W = {};
for (const w of D.weights) W[w.name] = w;
const DIFF = D.diff;
const SEARCH = "rgb(230,0,230)", ROW = 18;

// A weight's inclusive values and each node's children (in P.child, from P.first[k]), to be
// sorted by children() when drawn.
const prepared = {};
function prepare(name) {
  if (prepared[name]) return prepared[name];
  const self = T.self[name], incl = new Float64Array(n + 1);
  for (let k = 1; k <= n; k++) incl[k] = self[k - 1];
  for (let k = n; k >= 1; k--) incl[parent[k]] += incl[k];
  const first = new Int32Array(n + 2), child = new Int32Array(n + 1);
  for (let k = 1; k <= n; k++) first[parent[k] + 1]++;
  for (let k = 1; k <= n + 1; k++) first[k] += first[k - 1];
  const fill = first.slice();
  for (let k = 1; k <= n; k++) child[fill[parent[k]]++] = k;
  // the nodes come in the order of the document's first weight: their children already sorted
  const sorted = new Uint8Array(n + 1).fill(T.sorted === name ? 1 : 0);
  const P = { name, unit: W[name].unit, self, incl, first, child, sorted, diff: DIFF && DIFF.weights[name] };
  prepared[name] = P;
  return P;
}

// Each frame's place in the order of the labels, made the first time two values tie.
let RANK = null;
function rank(f) {
  if (!RANK) {
    RANK = new Int32Array(nf);
    Array.from(LABEL.keys()).sort((a, b) => LABEL[a] < LABEL[b] ? -1 : LABEL[a] > LABEL[b] ? 1 : 0)
      .forEach((f, i) => { RANK[f] = i; });
  }
  return RANK[f];
}

// Node k's children in P.child sorted the largest first, then by name, then by node (the order of
// cprof.export.model's children: the page and the SVG agree); sorted when first drawn, as a
// large tree draws few of its nodes.
function children(P, k) {
  if (!P.sorted[k] && P.first[k + 1] - P.first[k] > 1) {
    const incl = P.incl;
    const before = (a, b) => incl[b] - incl[a] || rank(frame[a]) - rank(frame[b]) || a - b;
    P.child.set(Array.from(P.child.subarray(P.first[k], P.first[k + 1])).sort(before), P.first[k]);
  }
  P.sorted[k] = 1;
}

// ---- state

let P = null, zoom = 0, icicle = !!D.icicle, matchF = null, selF = null, selRow = -1;
let threshold = DIFF ? DIFF.threshold : 0;

function fillOf(k) {
  if (matchF && matchF[frame[k]]) return SEARCH;
  if (P.diff) {
    const p = P.diff.pct[k - 1];
    return p === 0 || Math.abs(p) < threshold ? DIFF.neutral : D.colors[P.diff.fill[k - 1]];
  }
  return D.colors[F.color[frame[k]]];
}

function path(k) {
  const out = [];
  for (; k !== 0; k = parent[k]) out.push(k);
  return out.reverse();
}

// ---- the flame graph

// The boxes of the view: the zoomed node's callers full width (faded), the node full width, and
// its subtree to scale; children narrower than a pixel merged into one grey box per parent.
function layout(width) {
  const incl = P.incl, first = P.first, child = P.child, B = [];
  const up = path(zoom);
  up.forEach((k, i) => B.push({ k, x: 0, w: width, d: i + 1, anc: k !== zoom }));
  const total = incl[zoom], scale = total > 0 ? width / total : 0;
  let depth = up.length;
  const stack = [[zoom, 0, up.length]];
  while (stack.length) {
    const [p, x0, d] = stack.pop();
    let x = x0, rest = 0, restn = 0;
    children(P, p);
    for (let i = first[p]; i < first[p + 1]; i++) {
      const c = child[i], w = incl[c] * scale;
      if (incl[c] <= 0) continue;
      if (w >= 1) {
        B.push({ k: c, x, w, d: d + 1 });
        stack.push([c, x, d + 1]);
        if (d + 1 > depth) depth = d + 1;
      } else {
        rest += w; restn++;
      }
      x += w;
    }
    if (restn && rest >= 1) {
      B.push({ k: 0, x: x - rest, w: rest, d: d + 1, merged: restn });
      if (d + 1 > depth) depth = d + 1;
    }
  }
  return { B, depth };
}

function render() {
  if (!n) return;
  const g = $("graph"), box = $("boxes");
  const width = Math.max(100, g.clientWidth - 2);
  const { B, depth } = layout(width);
  const frag = document.createDocumentFragment();
  for (const b of B) {
    const d = el("div", "b");
    const y = icicle ? (b.d - 1) * ROW : (depth - b.d) * ROW;
    let fill = D.merged;
    if (b.k) {
      fill = fillOf(b.k);
      if (b.anc) d.classList.add("anc");
      if (selF && selF[frame[b.k]]) d.classList.add("sel");
      if (b.w > 28) d.textContent = F.short[frame[b.k]];
    } else if (b.w > 28) {
      d.textContent = b.merged + " more";
    }
    d.style.cssText = "left:" + b.x.toFixed(1) + "px;width:" + Math.max(b.w - 0.5, 0.5).toFixed(1) + "px;top:" + y + "px;background:" + fill;
    if (b.k) b.label = label(frame[b.k]);
    d._b = b;
    frag.appendChild(d);
  }
  box.style.height = depth * ROW + "px";
  clear(box).appendChild(frag);
  box._depth = depth;
  crumbs();
  $("reset").disabled = zoom === 0;
}

// The zoomed node in the window: a flame graph is read from its root up, so a tall one opens
// at its bottom, an icicle at its top.
function reveal() {
  const g = $("graph"), d = path(zoom).length, depth = $("boxes")._depth || 0;
  if (icicle) g.scrollTop = Math.max(0, (d - 2) * ROW);
  else g.scrollTop = Math.max(0, (depth - d + 2) * ROW - g.clientHeight);
}

function zoomTo(k) { zoom = k; render(); reveal(); }

function crumbs() {
  const c = clear($("crumbs"));
  const go = k => button(k ? F.short[frame[k]] : "all", "crumb", () => zoomTo(k));
  c.appendChild(go(0));
  for (const k of path(zoom)) { c.appendChild(document.createTextNode(" \u203a ")); c.appendChild(go(k)); }
}

function info(b) {
  const incl = P.incl, total = incl[0];
  if (!b.k) return b.merged + " frames narrower than a pixel, merged";
  const k = b.k, f = frame[k], unit = P.unit;
  const calls = T.self.calls ? T.self.calls[k - 1] : null;
  let s = label(f) + "  \u00b7  " + (where(f) || "C function");
  if (calls !== null) s += "  \u00b7  " + count(calls, W.calls.unit);
  s += "  \u00b7  " + amount(unit, incl[k]) + " (" + pct(total > 0 ? 100 * incl[k] / total : 0) + "), self " + amount(unit, P.self[k - 1]);
  if (P.diff) {
    const was = P.diff.base[k - 1];
    if (was === null) s += "  \u00b7  new: not in the base";
    else s += "  \u00b7  base " + amount(unit, was) + ", change " + (P.diff.pct[k - 1] >= 0 ? "+" : "") + P.diff.pct[k - 1] + " points of the total";
  }
  return s;
}

function search(term) {
  const out = $("matched");
  if (!term) { matchF = null; out.textContent = ""; render(); return; }
  let by = fname, re;
  if (term.slice(0, 5) === "file:") { by = where; term = term.slice(5); }
  try { re = new RegExp(term); } catch (e) { out.textContent = "Bad expression: " + term; return; }
  matchF = new Uint8Array(nf);
  let fns = 0;
  for (let f = 0; f < nf; f++) {
    const s = by(f);
    if (s !== null && re.test(s)) { matchF[f] = 1; fns++; }
  }
  // nested matches counted once: a node under a matched node adds nothing
  const under = new Uint8Array(n + 1), incl = P.incl;
  let sum = 0, nodes = 0;
  for (let k = 1; k <= n; k++) {
    if (matchF[frame[k]]) nodes++;
    if (under[parent[k]]) under[k] = 1;
    else if (matchF[frame[k]]) { under[k] = 1; sum += incl[k]; }
  }
  const share = incl[0] > 0 ? 100 * sum / incl[0] : 0;
  out.textContent = "Matched: " + share.toFixed(2) + "% (" + count(fns, "functions") + ", " + count(nodes, "frames") + ")";
  out.dataset.share = share.toFixed(4);
  render();
}

function setWeight(name) {
  P = prepare(name);
  $("weight").value = name;
  if (matchF) search($("search").value); else render();
}

function legend() {
  const box = clear($("legend"));
  for (const [color, text] of D.legend) {
    const s = el("span", "key");
    const sw = el("i");
    sw.style.background = color;
    s.append(sw, text);
    box.appendChild(s);
  }
}

function graphSetup() {
  if (!n) {
    $("graph-panel").replaceChildren(el("p", "warn", "No flame graph: " + (D.no_tree || "the profile has no call tree")));
    return;
  }
  const sel = $("weight");
  for (const w of D.weights) if (!DIFF || DIFF.weights[w.name]) sel.appendChild(new Option(w.label, w.name));
  sel.addEventListener("change", () => setWeight(sel.value));
  const ic = $("icicle");
  ic.checked = icicle;
  ic.addEventListener("change", () => { icicle = ic.checked; render(); reveal(); });
  const s = $("search");
  s.addEventListener("change", () => search(s.value));
  s.addEventListener("keydown", e => { if (e.key === "Enter") search(s.value); });
  $("reset").addEventListener("click", () => zoomTo(0));
  if (DIFF) {
    const t = $("threshold");
    $("thr-box").hidden = false;
    t.value = threshold;
    t.addEventListener("input", () => { const v = parseFloat(t.value); if (v >= 0) { threshold = v; render(); } });
  }
  const box = $("boxes"), details = $("details");
  box.addEventListener("click", e => {
    const b = e.target._b;
    if (b && b.k) zoomTo(b.k === zoom ? parent[b.k] : b.k);
  });
  box.addEventListener("mouseover", e => {
    const b = e.target._b;
    if (b) { details.textContent = info(b); e.target.title = details.textContent; }
  });
  box.addEventListener("mouseout", () => { details.textContent = "\u00a0"; });
  let timer = 0;
  window.addEventListener("resize", () => { clearTimeout(timer); timer = setTimeout(render, 100); });
  legend();
  setWeight(W[D.weight] && (!DIFF || DIFF.weights[D.weight]) ? D.weight : sel.options[0].value);
  reveal();
  const q = new URLSearchParams(location.search).get("s");
  if (q) { s.value = q; search(q); }
}

// ---- the table of functions

const TB = D.table, rows = TB ? TB.rows : [], names = TB ? TB.names : [];
let order = [], sortCol = TB ? TB.sort : 0, desc = true, limit = 200;
const NAME = -1;

function cellValue(r, c) {
  const row = rows[r];
  if (c === NAME) return names[r];
  const col = TB.columns[c];
  if (col.per !== undefined) return row[col.per] ? row[col.v] / row[col.per] : null;
  return row[col.v];
}

function cellText(r, c) {
  const col = TB.columns[c], row = rows[r], v = cellValue(r, c);
  // a change in percent of nothing: the function is new (cprof-stats --diff prints the same)
  if (v === null || v === undefined) return col.fmt === "pct" ? "new" : "";
  switch (col.fmt) {
    case "calls": return calls(v, row[col.pc]);
    case "ns": return f3(v);
    case "dns": return (v > 0 ? "+" : "") + f3(v);
    case "dn": return (v > 0 ? "+" : "") + v;
    case "pct": return (v > 0 ? "+" : "") + v.toFixed(1) + "%";
    default: return col.blank !== undefined && row[col.blank] === 0 ? "" : String(v);
  }
}

function sortRows() {
  const term = $("filter").value.toLowerCase();
  order = [];
  for (let r = 0; r < rows.length; r++) if (!term || names[r].toLowerCase().includes(term)) order.push(r);
  const c = sortCol, sign = desc ? -1 : 1;
  const key = order.map(r => cellValue(r, c));
  const idx = order.map((r, i) => i);
  idx.sort((a, b) => {
    const x = key[a], y = key[b];
    if (x === y) return a - b;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : 1) * sign;
  });
  order = idx.map(i => order[i]);
  drawRows();
}

function drawRows() {
  const body = clear($("table").tBodies[0]), ncol = TB.columns.length;
  const frag = document.createDocumentFragment();
  for (let i = 0; i < Math.min(limit, order.length); i++) {
    const r = order[i], tr = el("tr", r === selRow ? "on" : null);
    for (let c = 0; c < ncol; c++) {
      const td = el("td", "num", cellText(r, c)), col = TB.columns[c];
      if (col.signed) { const v = cellValue(r, c); if (v > 0) td.classList.add("grew"); else if (v < 0) td.classList.add("shrank"); }
      tr.appendChild(td);
    }
    const td = el("td", "fn", names[r]);
    td.title = names[r];
    tr.appendChild(td);
    tr._r = r;
    frag.appendChild(tr);
  }
  body.appendChild(frag);
  const more = $("more");
  more.hidden = order.length <= limit;
  more.textContent = "Show " + Math.min(500, order.length - limit) + " more of " + grouped(order.length - limit);
  $("count").textContent = grouped(order.length) + " of " + count(rows.length, "functions");
  const ths = $("table").tHead.rows[0].cells;
  for (let c = 0; c < ths.length; c++) {
    const mine = (c === ncol ? NAME : c) === sortCol;
    ths[c].setAttribute("aria-sort", mine ? (desc ? "descending" : "ascending") : "none");
  }
}

function tableSetup() {
  if (!TB) return;
  const tr = $("table").tHead.appendChild(el("tr"));
  const head = (text, title, c) => {
    const th = el("th", c === NAME ? "fn" : "num", text);
    if (title) th.title = title;
    th.addEventListener("click", () => {
      if (sortCol === c) desc = !desc; else { sortCol = c; desc = c !== NAME; }
      sortRows();
    });
    tr.appendChild(th);
  };
  TB.columns.forEach((col, c) => head(col.label, col.title, c));
  head("filename:lineno(function)", "the function, as cprof-stats prints it", NAME);
  $("filter").addEventListener("input", () => { limit = 200; sortRows(); });
  $("more").addEventListener("click", () => { limit += 500; drawRows(); });
  $("table").tBodies[0].addEventListener("click", e => {
    const tr = e.target.closest("tr");
    if (tr) select(tr._r);
  });
  sortRows();
}

// A row chosen: its callers and callees, the graph focused on the function, its source lines.
function select(r) {
  selRow = r;
  drawRows();
  showCalls(r);
  if (n) {
    selF = new Uint8Array(nf);
    let any = false;
    for (let f = 0; f < nf; f++) if (F.row[f] === r) { selF[f] = 1; any = true; }
    if (!any) selF = null;
    let best = 0;
    for (let k = 1; k <= n; k++) if (selF && selF[frame[k]] && (!best || P.incl[k] > P.incl[best])) best = k;
    if (best) zoomTo(best); else render();
  }
  if (D.lines) sourceFor(r);
}

// A function's callers (the edges of row r's callers, the caller shown) or callees (those it is
// the caller of, the callee shown): their calls, time and cumulative time.
function edgeTable(cls, title, r, callers) {
  const E = TB.edges, box = el("div", "edges " + cls);
  const list = [];
  if (callers) for (let j = E.first[r]; j < E.first[r + 1]; j++) list.push([j, E.caller[j]]);
  else for (let i = E.out_first[r]; i < E.out_first[r + 1]; i++) list.push([E.out[i], calleeOf()[E.out[i]]]);
  box.appendChild(el("h4", null, title));
  if (!list.length) { box.appendChild(el("p", "hint", "none")); return box; }
  const t = el("table"), h = t.createTHead().insertRow();
  for (const s of ["ncalls", "tottime", "cumtime", "function"]) h.appendChild(el("th", s === "function" ? "fn" : "num", s));
  const body = t.createTBody();
  for (const [j, other] of list) {
    const tr = body.insertRow(), nc = E.ncalls[j], rec = E.recursive[j];
    tr.append(el("td", "num", calls(nc, rec === null ? null : nc - rec)), el("td", "num", f3(E.tottime[j])),
      el("td", "num", f3(E.cumtime[j])));
    const td = el("td", "fn");
    td.appendChild(button(typeof other === "number" ? names[other] : other, "link", () => { if (typeof other === "number") select(other); }));
    tr.appendChild(td);
  }
  box.appendChild(t);
  return box;
}

// Each edge's callee: the row whose callers it is among.
let CALLEE = null;
function calleeOf() {
  if (!CALLEE) {
    const E = TB.edges;
    CALLEE = new Int32Array(E.caller.length);
    for (let r = 0; r < rows.length; r++) CALLEE.fill(r, E.first[r], E.first[r + 1]);
  }
  return CALLEE;
}

function showCalls(r) {
  const box = clear($("calls"));
  box.appendChild(el("h3", "fn", names[r]));
  box.appendChild(edgeTable("callers", "Called by (edge: calls, time in this function, cumulative)", r, true));
  box.appendChild(edgeTable("callees", "Calls (edge: calls, time in the callee, cumulative)", r, false));
}

// ---- source heat map

const L = D.lines;

// File i with each line's hits and time summed over the functions that ran it, as a colour the
// deeper the more time; with row r, that function's span marked and its own records in it (what
// cprof-stats --lines prints for it).
function showFile(i, r) {
  const f = L.files[i], box = clear($("source"));
  $("file").value = String(i);
  if (f.error) box.appendChild(el("p", "warn", f.error));
  const sums = new Map(), heads = new Map();
  let own = null, span = null, maxT = 0, last = 0;
  for (const [row, a, b, records] of f.funcs) {
    if (!heads.has(a)) heads.set(a, []);
    heads.get(a).push(row);
    if (row === r) { own = new Map(); span = [a, b]; }
    for (const [line, h, t] of records) {
      const x = sums.get(line) || [0, 0];
      x[0] += h; x[1] += t;
      sums.set(line, x);
      if (x[1] > maxT) maxT = x[1];
      if (line > last) last = line;
      if (row === r) own.set(line, [h, t]);
    }
  }
  const text = f.text || [], frag = document.createDocumentFragment();
  for (let line = 1; line <= Math.max(last, text.length); line++) {
    const inside = span && line >= span[0] && line <= span[1];
    if (!f.text && !sums.has(line) && !heads.has(line) && !inside) continue;
    for (const h of heads.get(line) || []) frag.appendChild(el("div", "head fn", names[h]));
    const row = el("div", "line"), hit = inside ? own.get(line) : sums.get(line);
    row.dataset.line = line;
    row.append(el("span", "no", line), el("span", "hits", hit ? String(hit[0]) : ""),
      el("span", "time", hit ? seconds(hit[1] * 1e-9) : ""), el("span", "code", text[line - 1] === undefined ? "" : text[line - 1]));
    if (hit && maxT > 0) row.style.background = "hsla(14,100%,55%," + (0.06 + 0.6 * Math.min(1, hit[1] / maxT)).toFixed(3) + ")";
    if (inside) row.classList.add("in");
    frag.appendChild(row);
  }
  box.appendChild(frag);
  markInView();
}

// The function chosen at the top of the source's box (when it is shown: a hidden box has no
// layout, so the Source tab calls this again).
function markInView() {
  const box = $("source"), mark = box.querySelector(".line.in");
  if (mark) box.scrollTop = Math.max(0, mark.offsetTop - 2 * mark.offsetHeight);
}

function sourceFor(r) {
  for (let i = 0; i < L.files.length; i++) {
    for (const fn of L.files[i].funcs) if (fn[0] === r) { showFile(i, r); return; }
  }
}

function sourceSetup() {
  const sel = $("file");
  L.files.forEach((f, i) => sel.appendChild(new Option(f.name, String(i))));
  sel.addEventListener("change", () => showFile(+sel.value));
  if (L.files.length) showFile(0);
}

// ---- memory

function memorySetup() {
  const M = D.memory, box = $("memory");
  box.appendChild(el("p", null, M.totals));
  const views = el("p");
  for (const w of ["alloc", "live"]) if (W[w]) views.appendChild(button("Flame graph of " + W[w].label, null, () => { setWeight(w); zoomTo(0); }));
  box.appendChild(views);
  box.appendChild(el("h3", null, "Leaks: blocks still live when the profile was written, by allocation context"));
  const leaks = M.leaks;
  if (!leaks.length) box.appendChild(el("p", "hint", "No context holds live objects."));
  else {
    const t = el("table", "leaks"), h = t.createTHead().insertRow();
    for (const s of ["live blocks", "live bytes", "allocations", "frees", "live types"]) h.appendChild(el("th", "num", s));
    h.appendChild(el("th", "fn", "stack (innermost first)"));
    const body = t.createTBody();
    for (const [k, blocks, live, allocs, frees, types] of leaks) {
      const tr = body.insertRow();
      tr.append(el("td", "num", grouped(blocks)), el("td", "num", grouped(live)), el("td", "num", grouped(allocs)),
        el("td", "num", grouped(frees)), el("td", null, types));
      const td = el("td", "fn stack");
      for (const j of path(k).reverse()) {
        const b = button(label(frame[j]), "link", () => { if (W.live) setWeight("live"); zoomTo(j); });
        td.appendChild(b);
      }
      tr.appendChild(td);
    }
    box.appendChild(t);
  }
  if (M.raw) box.appendChild(el("p", "hint", M.raw));
  if (M.allocator) {
    box.appendChild(el("h3", null, "Allocator"));
    box.appendChild(el("pre", null, M.allocator));
  }
}

// ---- memory over several dumps

function seriesSetup() {
  const S = D.series, box = $("series"), NS = "http://www.w3.org/2000/svg";
  const svg = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const a in attrs) e.setAttribute(a, attrs[a]);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const w = 760, h = 360, l = 90, r = 170, t = 30, b = 40, m = S.files.length;
  let max = 1;
  for (const c of S.columns) if (c.chart) for (const v of c.values) if (v !== null && v > max) max = v;
  const x = i => l + (m > 1 ? i * (w - l - r) / (m - 1) : (w - l - r) / 2), y = v => t + (h - t - b) * (1 - v / max);
  const chart = svg("svg", { width: w, height: h, viewBox: "0 0 " + w + " " + h, class: "chart" });
  chart.append(svg("line", { x1: l, y1: h - b, x2: w - r, y2: h - b, stroke: "#000" }),
    svg("line", { x1: l, y1: t, x2: l, y2: h - b, stroke: "#000" }),
    svg("text", { x: l - 4, y: t + 4, "text-anchor": "end" }, bytes(max)),
    svg("text", { x: l - 4, y: h - b, "text-anchor": "end" }, "0"));
  S.files.forEach((f, i) => {
    const lab = svg("text", { x: x(i), y: h - b + 16, "text-anchor": "middle" }, String(i + 1));
    lab.appendChild(svg("title", {}, f));
    chart.appendChild(lab);
  });
  let line = 0;
  for (const c of S.columns) {
    if (!c.chart) continue;
    const pts = [];
    c.values.forEach((v, i) => { if (v !== null) pts.push(x(i).toFixed(1) + "," + y(v).toFixed(1)); });
    const color = S.colors[line++ % S.colors.length];
    chart.append(svg("polyline", { fill: "none", stroke: color, "stroke-width": 2, points: pts.join(" ") }),
      svg("text", { x: w - r + 10, y: t + 16 * line, fill: color }, c.name));
  }
  box.appendChild(el("h3", null, "The allocator's numbers when each dump was written"));
  box.appendChild(chart);
  const tb = el("table"), hr = tb.createTHead().insertRow();
  hr.appendChild(el("th", "num", "#"));
  for (const c of S.columns) hr.appendChild(el("th", "num", c.name));
  hr.appendChild(el("th", "fn", "file"));
  const body = tb.createTBody();
  S.files.forEach((f, i) => {
    const tr = body.insertRow();
    tr.appendChild(el("td", "num", String(i + 1)));
    for (const c of S.columns) tr.appendChild(el("td", "num", c.values[i] === null ? "-" : grouped(c.values[i])));
    tr.appendChild(el("td", "fn", f));
  });
  box.appendChild(tb);
}

// ---- the page

function tabs() {
  const have = { functions: !!TB, source: !!L, memory: !!D.memory, series: !!D.series };
  const bar = $("tabs");
  let first = null;
  for (const b of Array.from(bar.children)) {
    const name = b.dataset.tab;
    b.hidden = !have[name];
    if (have[name] && !first) first = name;
    b.addEventListener("click", () => show(name));
  }
  function show(name) {
    for (const b of Array.from(bar.children)) b.classList.toggle("on", b.dataset.tab === name);
    for (const s of Array.from(document.querySelectorAll(".tab"))) s.hidden = s.id !== "tab-" + name;
    if (name === "source" && L) markInView();
  }
  show(first);
  bar.hidden = Object.values(have).filter(x => x).length < 2;
}

document.title = D.title;
$("title").textContent = D.title;
$("sub").textContent = D.subtitle.join("  \u00b7  ");
for (const note of D.notes) $("notes").appendChild(el("p", null, note));
if (D.series) $("graph-panel").hidden = true; else graphSetup();
tableSetup();
if (L) sourceSetup();
if (D.memory) memorySetup();
if (D.series) seriesSetup();
tabs();
document.documentElement.dataset.ready = performance.now().toFixed(1);
})();
