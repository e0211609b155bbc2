// The overview: the pipeline graph, the partition grid with its zoom and
// range, the live claims, and (admins) the range operations.
import { html, nothing, render } from "lit-html";
import { columnAt, format, ordinal, unit, zooms, type Zoom } from "../calendar";
import { isAdmin, state } from "../state";
import { outputStatuses, statusName } from "../util";
import { rangeForm } from "./actions";
import { renderClaims, rereadClaims } from "./claims";
import { axisOf, defaultView, grid, renderGrid, setup, show, timeDatasets, viewFrom, viewHash, type View } from "./grid";
import { OtherRow } from "./other";
import { loadBehind, loadMembers, onTimeAxis, picksQuery, readPicks } from "./picker";
import { pipe, renderPipeline } from "./pipeline";

export async function overview(view: HTMLElement, q: URLSearchParams) {
  const focus = q.get("focus") || "";
  if (focus !== pipe.focus) (pipe.focus = focus), (pipe.fitted = "");
  render(
    html`<section><h2>Pipeline</h2><div id="pipeline" class="panel"></div></section>
      <section><h2>Partitions</h2><div id="grid-tools"></div><div id="grid-host" class="panel"></div></section>
      <section><h2>Live claims</h2><div id="claims"></div></section>
      <div id="range-host"></div>`,
    view,
  );
  // The dimension pickers' choices, and what their rows wait for: the
  // values behind of a dimension with more values than rows (drawn first).
  readPicks(q);
  await loadBehind(state.datasets, true);
  setup();
  const times = timeDatasets();
  const v = viewFrom(q) || defaultView(times);
  grid.onLoaded = () => renderPipeline();
  if (v) renderTools(v);
  if (v) show(v);
  else renderGrid();
  if (!v) show0();
  renderPipeline();
  renderClaims();
  // The live claims after the rows in sight: they cost the store a read per dataset.
  grid.onReady = () => rereadClaims(() => (renderClaims(), renderPipeline()), 0);
  if (!v) grid.onReady();
  if (isAdmin()) rangeForm(document.getElementById("range-host")!);
  // When each DYNAMIC value is expected from, for the rows' labels and hover.
  loadMembers(state.datasets.filter(onTimeAxis)).then(renderGrid, () => {});
}

/** show0 loads the rows on axes of their own when no dataset has a time definition. */
function show0() {
  OtherRow.load(grid.others, () => (renderGrid(), renderPipeline()));
}

function renderTools(v: View) {
  const el = document.getElementById("grid-tools");
  if (!el) return;
  const n = v.c1 - v.c0 + 1;
  const go = (w: View) => (location.hash = viewHash(w));
  const setZoom = (z: Zoom) => {
    // keep the last day in sight, in the new zoom's columns
    const day = lastDay(v);
    location.hash = `#/?zoom=${z}&to=${format(z, z === "HOURLY" ? day * 24 + 23 : columnAt(z, day * 86400000))}${picksQuery()}`;
  };
  const submit = (ev: Event) => {
    ev.preventDefault();
    const f = new FormData(ev.target as HTMLFormElement);
    const from = ordinal(v.zoom, String(f.get("from")).trim());
    const to = ordinal(v.zoom, String(f.get("to")).trim());
    if (!Number.isNaN(from) && !Number.isNaN(to) && from <= to) go({ zoom: v.zoom, c0: from, c1: to });
  };
  render(
    html`<form id="range" class="tools" @submit=${submit}>
      <span class="zooms">${zooms.map((z) => html`<button type="button" class=${z === v.zoom ? "on" : ""} data-zoom=${z} @click=${() => setZoom(z)}>${unit[z][1]}</button>`)}</span>
      <button type="button" id="prev" title="earlier" @click=${() => go({ zoom: v.zoom, c0: v.c0 - n, c1: v.c1 - n })}>◀</button>
      <label>from <input name="from" .value=${format(v.zoom, v.c0)} size="13"></label>
      <label>to <input name="to" .value=${format(v.zoom, v.c1)} size="13"></label>
      <button type="button" id="next" title="later" @click=${() => go({ zoom: v.zoom, c0: v.c0 + n, c1: v.c1 + n })}>▶</button>
      <button type="submit">Show</button>
      <button type="button" id="newest" title="where the data is" @click=${() => (location.hash = "#/")}>newest</button>
      <span class="legend">${outputStatuses.map((s) => html`<i class="c s-${s}"></i>${statusName(s)} `)}<i class="c s-NONE late"></i>late
        <i class="c s-MIXED"></i>mixed (hover for counts)</span>
    </form>
    ${timeDatasets().some((d) => axisOf(d).kind !== v.zoom)
      ? html`<p class="muted small">A coarser dataset spans its window's columns; a finer one is summed per column (click it to open it at its own level).</p>`
      : nothing}`,
    el,
  );
}

/** lastDay is the last day of a view's last column. */
function lastDay(v: View): number {
  switch (v.zoom) {
    case "HOURLY":
      return Math.floor(v.c1 / 24);
    case "DAILY":
      return v.c1;
    case "WEEKLY":
      return 7 * v.c1 + 3;
    case "MONTHLY":
      return Math.floor(Date.UTC(Math.floor(v.c1 / 12), (v.c1 % 12) + 1, 0) / 86400000);
  }
}
