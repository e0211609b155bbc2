// The partition grid: every dataset with a time definition on one time
// axis at a zoom (hours, days, weeks, months), the others (INTEGER, STATIC,
// no definition) on axes of their own below. Rows are drawn from runs, as
// stretches of one look, and only the rows in sight are in the page: a
// catalog of hundreds of datasets scrolls without drawing them all.
import { html, render, nothing } from "lit-html";
import { repeat } from "lit-html/directives/repeat.js";
import { columnAt, columns, format, isTime, label, ordinal, periodsIn, unit, zooms, type Zoom } from "../calendar";
import { datasetHref, chunkHref, isAdmin, state, type Dataset } from "../state";
import { statusName, plural } from "../util";
import { mix, loadRows, TimeRow, type Segment } from "./rows";
import { OtherRow } from "./other";
import { selectRange } from "./actions";
import { layoutOf, loadBehind, memberOf, onTimeAxis, picksQuery, pickerView, setPick, tupleOf, type Layout, type Pick } from "./picker";

const rowH = 22;
const labelW = 230;
const overscan = 8;

export interface View {
  zoom: Zoom;
  c0: number;
  c1: number;
}

/** a picker's strip above a dataset's rows on the time axis */
interface Strip {
  strip: Layout;
  key: string;
}

export const grid = {
  view: null as View | null,
  rows: [] as TimeRow[],
  /** what the time axis draws, in order: the rows, each dataset with dimensions under its picker */
  items: [] as (TimeRow | Strip)[],
  /** the layout of each dataset drawn under a picker */
  layouts: new Map<string, Layout>(),
  others: [] as OtherRow[],
  byId: new Map<string, TimeRow | OtherRow>(),
  cw: 16,
  /** the first and last row drawn */
  shown: [0, -1] as [number, number],
  /** what shift-click selected (admins), for the range form */
  anchor: null as { ds: string; id: string } | null,
  selected: null as { ds: string; from: string; to: string } | null,
  onLoaded: () => {},
  /** called once the rows in sight of a view are drawn */
  onReady: () => {},
};

/** trackWidth is the width the columns have in the page. */
function trackWidth(): number {
  const el = document.getElementById("view") || document.body;
  return Math.max(200, el.clientWidth - labelW - 24);
}

const cellWidth: Record<Zoom, number> = { HOURLY: 16, DAILY: 16, WEEKLY: 26, MONTHLY: 30 };

/**
 * defaultView is where the data is: the finest zoom of the time datasets
 * (days for hourly data spanning more than a page of hours), ending a little
 * after the newest READY chunk (or now, for a live pipeline), never past
 * the last defined window, starting no earlier than the first one.
 */
export function defaultView(times: Dataset[]): View | null {
  if (!times.length) return null;
  const axes = times.map(axisOf);
  let zoom = zooms.find((z) => axes.some((a) => a.kind === z))!;
  const fit = Math.floor(trackWidth() / cellWidth.HOURLY);
  if (zoom === "HOURLY") {
    const long = axes.some((a) => a.kind === "HOURLY" && a.latest && a.start && ordinal("HOURLY", a.latest) - ordinal("HOURLY", a.start) > fit);
    if (long) zoom = "DAILY";
  }
  const n = Math.floor(trackWidth() / cellWidth[zoom]);
  const colsOf = (k: Zoom, id: string) => columns(k, ordinal(k, id), zoom);
  const now = columnAt(zoom, Date.now());
  const latest = axes.filter((a) => a.latest).map((a) => colsOf(a.kind, a.latest!)[1]);
  let c1 = latest.length ? Math.max(...latest) + 2 : now;
  if (now >= c1 && now - c1 <= n / 3) c1 = now + 1;
  const ends = axes.map((a) => (a.end ? colsOf(a.kind, a.end)[1] : Infinity));
  c1 = Math.min(c1, Math.max(...ends));
  return { zoom, c0: Math.max(c1 - n + 1, firstColumn(times, zoom)), c1 };
}

/** timeDatasets are the datasets drawn on the time axis: a time kind, or dimensions whose first is one (onTimeAxis). */
export function timeDatasets(): Dataset[] {
  return state.datasets.filter((d) => isTime(d.partitions?.kind) || onTimeAxis(d));
}

/**
 * axisOf is where a dataset on the time axis lies on it: its time kind,
 * start and end, and its newest READY dataid's time value (a dataset with
 * dimensions: its first dimension's, and the first value of the tuple).
 */
export function axisOf(d: Dataset): { kind: Zoom; start: string | null; end: string | null; latest: string | null } {
  const p = d.partitions!;
  const t = p.dimensions ? p.dimensions[0] : p;
  return { kind: t.kind as Zoom, start: t.start, end: t.end, latest: d.latestReady ? d.latestReady.split("|")[0] : null };
}

/** firstColumn is the first column of zoom any time definition expects a dataid in. */
function firstColumn(times: Dataset[], zoom: Zoom): number {
  const starts = times
    .map(axisOf)
    .filter((a) => a.start)
    .map((a) => columns(a.kind, ordinal(a.kind, a.start!), zoom)[0]);
  return starts.length ? Math.min(...starts) : -Infinity;
}

/** viewFrom reads a view from the URL (zoom, from, to), or null. */
export function viewFrom(q: URLSearchParams): View | null {
  const zoom = q.get("zoom") as Zoom | null;
  if (!zoom || !isTime(zoom)) return null;
  const to = ordinal(zoom, q.get("to") || "");
  const from = ordinal(zoom, q.get("from") || "");
  const n = Math.floor(trackWidth() / cellWidth[zoom]);
  const first = firstColumn(timeDatasets(), zoom);
  if (!Number.isNaN(to)) return { zoom, c0: Number.isNaN(from) ? Math.max(to - n + 1, Math.min(first, to)) : Math.max(from, to - 4 * n), c1: to };
  if (!Number.isNaN(from)) return { zoom, c0: from, c1: from + n - 1 };
  return null;
}

/** viewHash is the overview's hash for a view, with the dimension pickers' choices (picker.ts). */
export function viewHash(v: View): string {
  return `#/?zoom=${v.zoom}&from=${format(v.zoom, v.c0)}&to=${format(v.zoom, v.c1)}${picksQuery()}`;
}

/** setup makes the grid's rows for the catalog (kept across views when it did not change). */
export function setup() {
  const keep = grid.byId;
  grid.byId = new Map();
  grid.rows = [];
  grid.items = [];
  grid.layouts = new Map();
  grid.others = [];
  for (const d of state.datasets) {
    const old = keep.get(d.id);
    const same = old && JSON.stringify(old.ds.partitions) === JSON.stringify(d.partitions);
    if (onTimeAxis(d)) {
      // Dimensions after a time one: the picker, then a row per value of
      // the dimension it chose (or one slice), on the time axis.
      const l = layoutOf(d);
      grid.layouts.set(d.id, l);
      grid.items.push({ strip: l, key: `pick:${d.id}` });
      for (const v of l.values) {
        const slice = tupleOf(l, v);
        const key = `${d.id}|${slice.map((x) => x.value).join("|")}`;
        const was = keep.get(key);
        const r = was instanceof TimeRow && JSON.stringify(was.ds.partitions) === JSON.stringify(d.partitions) ? was : new TimeRow(d, slice);
        r.ds = d;
        r.by = l.by?.name ?? null;
        grid.rows.push(r);
        grid.items.push(r);
        grid.byId.set(key, r);
      }
    } else if (isTime(d.partitions?.kind)) {
      const r = same && old instanceof TimeRow ? old : new TimeRow(d);
      r.ds = d;
      grid.rows.push(r);
      grid.items.push(r);
      grid.byId.set(d.id, r);
    } else {
      const r = same && old instanceof OtherRow ? old : new OtherRow(d);
      r.ds = d;
      grid.others.push(r);
      grid.byId.set(d.id, r);
    }
  }
}

/**
 * repick applies a dataset's new pick: its rows are laid out again, the
 * new ones read, and the hash keeps the choice (without a new view: the
 * rows of the other datasets stay as they are).
 */
async function repick(ds: string, p: Pick) {
  setPick(ds, p);
  const d = state.byId.get(ds);
  if (d) await loadBehind([d]);
  setup();
  const v = grid.view;
  if (!v) return;
  // A view of its own (zoom, from, to) stays; the default one (#/) stays the default.
  const pinned = new URLSearchParams(location.hash.split("?")[1] || "").has("zoom");
  history.replaceState(null, "", pinned ? viewHash(v) : `#/?${picksQuery().slice(1)}`);
  const stale = grid.rows.filter((r) => r.setView(v.zoom, v.c0, v.c1));
  renderGrid();
  loadRows(stale, drawn).then(() => {
    scheduleChanges();
    grid.onLoaded();
  });
}

/** rowFor is the row that draws a dataset's dataid, if any (of a tuple: the row of its values after the first). */
export function rowFor(ds: string, dataid: string): TimeRow | OtherRow | undefined {
  return grid.byId.get(ds) ?? grid.byId.get(`${ds}|${dataid.slice(dataid.indexOf("|") + 1)}`);
}

/** countsOf tallies what the grid loaded of a dataset, over its rows. */
export function countsOf(ds: string): Record<string, number> {
  const one = grid.byId.get(ds);
  if (one) return one.counts();
  const out: Record<string, number> = {};
  for (const r of grid.rows) {
    if (r.ds.id !== ds) continue;
    for (const [k, n] of Object.entries(r.counts())) out[k] = (out[k] || 0) + n;
  }
  return out;
}

/** show points the grid at a view and loads what is in sight first. */
export function show(v: View) {
  grid.view = v;
  // Whole pixels: the cells' gaps stay crisp.
  grid.cw = Math.max(4, Math.min(40, Math.floor(trackWidth() / (v.c1 - v.c0 + 1))));
  const stale = grid.rows.filter((r) => r.setView(v.zoom, v.c0, v.c1));
  renderGrid();
  const [a, b] = grid.shown;
  const inSight = new Set(grid.items.slice(a, b + 1));
  const first = stale.filter((r) => inSight.has(r));
  const rest = stale.filter((r) => !first.includes(r));
  const others = grid.others.filter((r) => !r.loaded && !r.loading);
  let left = 2;
  const settle = () => {
    if (--left > 0) return;
    scheduleChanges();
    grid.onLoaded();
    // every row of the view read (bench/uigrid: the overview's traffic)
    const w = window as any;
    if (!w.gridLoadedAt) w.gridLoadedAt = performance.now();
  };
  loadRows(first, drawn).then(() => {
    markReady();
    loadRows(rest, drawn).then(settle);
  });
  OtherRow.load(others, () => renderGrid()).then(settle);
}

/** reload reads rows again (after events, or when the clock changed them). */
export function reload(rows: TimeRow[]) {
  for (const r of rows) r.reset();
  loadRows(rows, drawn).then(() => {
    scheduleChanges();
    grid.onLoaded();
  });
}

/** refresh reads every row again (after the websocket was away: events may have been missed). */
export function refresh() {
  if (grid.view) reload(grid.rows);
  for (const r of grid.others) r.loaded = false;
  OtherRow.load(grid.others, () => renderGrid());
}

let frame = 0;
function drawn() {
  if (!frame) frame = requestAnimationFrame(() => ((frame = 0), renderGrid()));
}

/** markReady records when the rows in sight were first drawn (bench/uigrid). */
function markReady() {
  renderGrid();
  grid.onReady();
  const el = document.getElementById("grid");
  if (!el) return;
  el.dataset.ready = "1";
  const w = window as any;
  if (!w.gridReadyAt) w.gridReadyAt = performance.now();
}

let changesTimer: ReturnType<typeof setTimeout> | undefined;
/** scheduleChanges reads again, when the clock changes them, the rows whose answer said when. */
export function scheduleChanges() {
  clearTimeout(changesTimer);
  const at = Math.min(...grid.rows.map((r) => r.changesAt));
  const el = document.getElementById("grid");
  if (el) el.dataset.changesAt = Number.isFinite(at) ? new Date(at).toISOString() : "";
  if (!Number.isFinite(at)) return;
  // A second after (the server decides with its own clock); long waits are taken again later.
  changesTimer = setTimeout(
    () => {
      const due = grid.rows.filter((r) => r.changesAt <= Date.now() + 500);
      if (due.length) reload(due);
      else scheduleChanges();
    },
    Math.min(Math.max(at - Date.now() + 1000, 1000), 2 ** 31 - 1),
  );
}

// ------------------------------------------------------------- drawing

export function renderGrid() {
  const host = document.getElementById("grid-host");
  const v = grid.view;
  if (!host) return;
  render(html`${v ? timeGrid(v) : html`<p class="muted">No dataset has a time partition definition.</p>`} ${otherGrid()}`, host);
}

function timeGrid(v: View) {
  const body = document.getElementById("grid-body");
  const top = body ? body.scrollTop : 0;
  const height = body ? body.clientHeight : 600;
  const items = grid.items;
  const a = Math.max(0, Math.floor(top / rowH) - overscan);
  const b = Math.min(items.length - 1, Math.ceil((top + height) / rowH) + overscan);
  grid.shown = [a, b];
  const n = v.c1 - v.c0 + 1;
  const width = n * grid.cw;
  const now = columnAt(v.zoom, Date.now());
  return html`<div id="grid" class="grid" style="--cw: ${grid.cw}px; --track: ${width}px">
    ${axis(v)}
    <div id="grid-body" class="gbody" @scroll=${onScroll} style="max-height: ${Math.min(items.length * rowH + 4, 620)}px">
      <div class="gspace" style="height: ${items.length * rowH}px">
        <div class="gwin" style="transform: translateY(${a * rowH}px)">
          ${repeat(
            items.slice(a, b + 1),
            (r) => r.key,
            (r) => (r instanceof TimeRow ? rowView(r, v) : pickerView(r.strip, (p) => repick(r.strip.ds.id, p))),
          )}
        </div>
        ${now >= v.c0 && now <= v.c1 ? html`<div class="now" style="left: ${labelW + (now - v.c0) * grid.cw}px" title="now"></div>` : nothing}
      </div>
    </div>
  </div>`;
}

function onScroll() {
  const body = document.getElementById("grid-body")!;
  const [a, b] = grid.shown;
  const first = Math.floor(body.scrollTop / rowH);
  const last = Math.ceil((body.scrollTop + body.clientHeight) / rowH);
  if (first - overscan / 2 < a && a > 0) renderGrid();
  else if (last + overscan / 2 > b && b < grid.items.length - 1) renderGrid();
}

function axis(v: View) {
  const minors = [];
  const majors = [];
  const every = Math.max(1, Math.ceil((v.zoom === "WEEKLY" ? 30 : 20) / grid.cw));
  const width = (v.c1 - v.c0 + 1) * grid.cw;
  let lastMajor = -Infinity;
  for (let c = v.c0; c <= v.c1; c++) {
    const l = label(v.zoom, c);
    const x = (c - v.c0) * grid.cw;
    if ((c === v.c0 || l.opens) && (x + 60 < width || c === v.c0) && x >= lastMajor + 60) {
      majors.push(html`<span class="major" style="left: ${x}px">${l.major}</span>`);
      lastMajor = x;
    }
    if ((c - v.c0) % every === 0) minors.push(html`<span class="minor" style="left: ${(c - v.c0) * grid.cw}px">${l.text}</span>`);
  }
  return html`<div class="gaxis"><div class="glabel"><span class="muted">${unit[v.zoom][1]}</span></div>
    <div class="gticks"><div class="majors">${majors}</div><div class="minors">${minors}</div></div></div>`;
}

const kindTag: Record<string, string> = { HOURLY: "H", DAILY: "D", WEEKLY: "W", MONTHLY: "M", INTEGER: "#", STATIC: "S", DYNAMIC: "+" };

function rowView(r: TimeRow, v: View) {
  return html`<div class="grow" data-ds=${r.key} data-dataset=${r.ds.id}>
    <div class="glabel"><a href=${datasetHref(r.ds.id)} title=${r.ds.description || r.ds.id}>${r.ds.id}</a>${r.slice
        ? html` <span class="slice${behindRow(r) ? " behind" : ""}" title=${sliceTitle(r)}>${r.label}</span>`
        : nothing}
      <span class="kind" title=${r.kind.toLowerCase()}>${kindTag[r.kind]}</span></div>
    <div class="track" @mousemove=${(e: MouseEvent) => hover(e, r)} @mouseleave=${unhover} @click=${(e: MouseEvent) => click(e, r)}>
      ${r.error ? html`<span class="error small">${r.error}</span>` : r.segments.map((s) => segView(s, v))}
      ${grid.selected?.ds === r.ds.id && !r.slice ? selBox(r, v) : nothing}
      ${!r.loaded && !r.segments.length && !r.error ? html`<span class="loading-bar"></span>` : nothing}
    </div></div>`;
}

function segView(s: Segment, v: View) {
  const a = Math.max(s.a, v.c0);
  const b = Math.min(s.b, v.c1);
  if (a > b) return nothing;
  const left = (a - v.c0) * grid.cw;
  const width = (b - a + 1) * grid.cw;
  const style = `left: ${left}px; width: ${width}px` + (s.counts && s.status === "MIXED" ? `; background: ${gradient(s)}` : "");
  return html`<i class="seg s-${s.status}${s.late ? " late" : ""}${s.cells ? " cells" : " block"}" style=${style}
    data-from=${s.id ?? format(v.zoom, a)} data-to=${s.id ?? format(v.zoom, b)}></i>`;
}

/** selBox marks the range shift-clicked on a row. */
function selBox(r: TimeRow, v: View) {
  const sel = grid.selected!;
  const a = Math.max(v.c0, columns(r.kind, ordinal(r.kind, sel.from), v.zoom)[0]);
  const b = Math.min(v.c1, columns(r.kind, ordinal(r.kind, sel.to), v.zoom)[1]);
  if (a > b) return nothing;
  return html`<i class="selbox" style="left: ${(a - v.c0) * grid.cw - 1}px; width: ${(b - a + 1) * grid.cw}px" data-from=${sel.from} data-to=${sel.to}></i>`;
}

/**
 * gradient draws a column's statuses stacked by share, each status that is
 * not READY a quarter of the cell at least, so that one failed hour in a
 * day shows (the hover gives the counts).
 */
function gradient(s: Segment): string {
  const parts = mix(s.counts!).map(([st, n]) => [st, st === "READY" ? n : Math.max(n, s.counts!.count / 4)] as [string, number]);
  const total = parts.reduce((sum, [, n]) => sum + n, 0) || 1;
  let at = 0;
  const stops = parts.map(([st, n]) => {
    const from = (at / total) * 100;
    at += n;
    return `var(--${st.toLowerCase()}) ${from.toFixed(1)}% ${((at / total) * 100).toFixed(1)}%`;
  });
  return `linear-gradient(to top, ${stops.join(", ")})`;
}

// ------------------------------------------------------------- pointing

function columnOf(e: MouseEvent): number {
  const track = e.currentTarget as HTMLElement;
  const x = e.clientX - track.getBoundingClientRect().left;
  return grid.view!.c0 + Math.floor(x / grid.cw);
}

/** describe says what a row holds at column c, for the tooltip and the tests. */
export function describe(r: TimeRow, c: number): { text: string; status: string; late: boolean; id?: string } | null {
  const v = grid.view!;
  const s = r.at(c);
  const col = format(v.zoom, c);
  const of = r.slice ? ` (${r.sliceText})` : "";
  if (!s) return r.loaded ? { text: `${r.ds.id} ${col}${of}: nothing expected${notYet(r, c)}`, status: "", late: false } : null;
  if (s.counts) {
    const parts = mix(s.counts).map(([st, n]) => `${n} ${statusName(st)}`);
    const late = s.counts.late ? `, ${s.counts.late} late` : "";
    return { text: `${r.ds.id} ${col}${of}: ${plural(s.counts.count, unit[r.kind][0], unit[r.kind][1])}: ${parts.join(", ")}${late}`, status: s.status, late: s.late };
  }
  const id = s.id ?? r.dataid(format(r.kind, c));
  return { text: `${r.ds.id} ${id}: ${statusName(s.status)}${s.late ? " (late)" : ""}`, status: s.status, late: s.late, id };
}

/** notYet says why a sliced row expects nothing at column c when a DYNAMIC value of it is expected only later. */
function notYet(r: TimeRow, c: number): string {
  const v = grid.view!;
  for (const x of r.slice || []) {
    const from = memberOf(r.ds.id, x.dimension, x.value)?.expectedFrom;
    if (from && columns(r.kind, ordinal(r.kind, from), v.zoom)[0] > c) return ` (${x.dimension} ${x.value} is expected from ${from})`;
  }
  return "";
}

/** behindRow: the row's value is one of those behind, drawn first. */
function behindRow(r: TimeRow): boolean {
  return !!grid.layouts.get(r.ds.id)?.behind.has(r.label);
}

/** sliceTitle spells a sliced row's values, and from when a DYNAMIC one is expected. */
function sliceTitle(r: TimeRow): string {
  return (r.slice || [])
    .map((x) => {
      const from = memberOf(r.ds.id, x.dimension, x.value)?.expectedFrom;
      return `${x.dimension} ${x.value}${from ? ` (expected from ${from})` : ""}`;
    })
    .join(", ");
}

function hover(e: MouseEvent, r: TimeRow) {
  const tip = document.getElementById("tip");
  const d = describe(r, columnOf(e));
  if (!tip || !d) return unhover();
  tip.textContent = d.text;
  tip.hidden = false;
  tip.style.left = `${Math.min(e.clientX + 12, window.innerWidth - 340)}px`;
  tip.style.top = `${e.clientY + 16}px`;
}

function unhover() {
  const tip = document.getElementById("tip");
  if (tip) tip.hidden = true;
}

function click(e: MouseEvent, r: TimeRow) {
  const c = columnOf(e);
  const s = r.at(c);
  const v = grid.view!;
  if (!s) return;
  if (s.counts) {
    // a finer dataset: open the column at the dataset's own level
    const [lo, hi] = periodsIn(r.kind, v.zoom, c, c);
    location.hash = viewHash({ zoom: r.kind, c0: lo, c1: hi });
    return;
  }
  const id = s.id ?? r.dataid(format(r.kind, c));
  // A range of a region's row would reach every region between its ends:
  // shift-click selects on rows of one axis only.
  if (e.shiftKey && isAdmin() && !r.slice) return selectRange(r.ds.id, id);
  location.hash = chunkHref(r.ds.id, id);
}

/** cell tells what the grid draws for a dataid of a dataset (tests and bench). */
export function cell(ds: string, id: string): { status: string; late: boolean; text: string; x: number; y: number } | null {
  const r = grid.byId.get(ds);
  if (!(r instanceof TimeRow) || !grid.view) return null;
  const v = grid.view;
  const n = ordinal(r.kind, id);
  const [a] = columns(r.kind, n, v.zoom);
  const d = describe(r, a);
  const el = document.querySelector(`.grow[data-ds="${CSS.escape(ds)}"] .track`);
  if (!d || !el) return null;
  const box = el.getBoundingClientRect();
  return { status: d.status, late: d.late, text: d.text, x: box.left + (a - v.c0 + 0.5) * grid.cw, y: box.top + rowH / 2 - 2 };
}

function otherGrid() {
  if (!grid.others.length) return nothing;
  const w = trackWidth() - 90; // room for the count
  return html`<h3>Other axes <span class="note muted">INTEGER, STATIC, DYNAMIC, datasets with dimensions not drawn above (no time dimension first, or no STATIC or DYNAMIC one after it) and datasets without a definition: their dataids in order, each run of one status as wide as its share</span></h3>
    <div class="grid others" style="--track: ${w}px">${grid.others.map((r) => r.view(w))}</div>`;
}
