// The pipeline graph: datasets and jobs (inputs → job → output), laid out
// by dagre in a worker, each input edge labelled with its mapping. It fits
// the page's width; wheel or the buttons zoom, dragging pans, the search
// box finds a dataset or job, the filter dims what has nothing of a status,
// and focus keeps one dataset with its upstream and downstream.
import { html, nothing, render, svg } from "lit-html";
import { mappingLabel } from "../mapping";
import { datasetHref, jobHref, kindLabel, state } from "../state";
import { plural, statusName } from "../util";
import { countsOf, grid } from "./grid";
import type { LayoutIn, LayoutOut } from "./graphtypes";
import { layout, path } from "./layout";

const DW = 200;
const DH = 52;
const JW = 168;
const JH = 34;

export const pipe = {
  focus: "",
  search: "",
  filter: "all",
  layout: null as LayoutOut | null,
  want: "",
  s: 1,
  tx: 0,
  ty: 0,
  fitted: "",
};

/** graphOf is the part of the pipeline on show: all of it, or one dataset's upstream and downstream. */
function graphOf(): LayoutIn {
  let ds = state.datasets.map((d) => d.id);
  let jobs = state.jobs;
  if (pipe.focus && state.byId.has(pipe.focus)) {
    const keep = new Set<string>([pipe.focus]);
    const walk = (id: string, up: boolean) => {
      const next = up ? [state.byId.get(id)?.producer?.id].filter(Boolean).flatMap((j) => state.jobById.get(j!)!.inputs) : (state.readers.get(id) || []).map((j) => j.output);
      for (const n of next) if (!keep.has(n)) keep.add(n), walk(n, up);
    };
    walk(pipe.focus, true);
    walk(pipe.focus, false);
    ds = ds.filter((d) => keep.has(d));
    jobs = jobs.filter((j) => keep.has(j.output) && j.inputs.every((i) => keep.has(i)));
  }
  const edges: LayoutIn["edges"] = [];
  for (const j of jobs) {
    for (const i of j.inputs) edges.push({ v: "d:" + i, w: "j:" + j.id, label: mappingLabel(j, i) });
    edges.push({ v: "j:" + j.id, w: "d:" + j.output, label: "" });
  }
  const nodes = [...ds.map((id) => ({ id: "d:" + id, w: DW, h: DH })), ...jobs.map((j) => ({ id: "j:" + j.id, w: JW, h: JH }))];
  return { key: JSON.stringify([nodes.map((n) => n.id), edges]), nodes, edges };
}

/** renderPipeline draws the graph into #pipeline, asking the worker for a layout when the graph changed. */
export function renderPipeline() {
  const host = document.getElementById("pipeline");
  if (!host) return;
  const g = graphOf();
  if (!pipe.layout || pipe.layout.key !== g.key) {
    if (pipe.want !== g.key) {
      pipe.want = g.key;
      layout(g).then((l) => {
        if (l.key !== pipe.want) return;
        pipe.layout = l;
        renderPipeline();
      });
    }
    if (!pipe.layout) {
      // As high as the graph will be, about, so that the page does not jump when it comes.
      render(html`${toolbar()}<p class="muted laying" style="height: ${estimate(g)}px">Laying out ${plural(state.datasets.length, "dataset")} and ${plural(state.jobs.length, "job")}…</p>`, host);
      return;
    }
  }
  const l = pipe.layout!;
  const width = (host.clientWidth || 1000) - 18; // the panel's padding
  if (pipe.fitted !== l.key) fit(l, width);
  const height = Math.max(140, Math.min(560, l.height * pipe.s + 8));
  render(
    html`${toolbar()}
      <svg id="pipeline-svg" width="100%" height=${height} @wheel=${wheel} @pointerdown=${drag}
        data-scale=${pipe.s.toFixed(3)} data-width=${l.width} data-height=${l.height}>
        <defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>
        <g transform="translate(${pipe.tx},${pipe.ty}) scale(${pipe.s})">
          ${l.edges.map((e) => edge(e, g))}
          ${Object.entries(l.nodes).map(([id, p]) => (id.startsWith("d:") ? datasetNode(id.slice(2), p) : jobNode(id.slice(2), p)))}
        </g>
      </svg>`,
    host,
  );
}

/** estimate is about the height dagre will give g, at the scale it will be drawn. */
function estimate(g: LayoutIn): number {
  const depth = new Map<string, number>();
  const from = new Map<string, string[]>();
  for (const e of g.edges) from.set(e.w, [...(from.get(e.w) || []), e.v]);
  const of = (id: string, seen = 0): number => {
    if (depth.has(id)) return depth.get(id)!;
    const d = seen > 200 ? 0 : Math.max(-1, ...(from.get(id) || []).map((p) => of(p, seen + 1))) + 1;
    depth.set(id, d);
    return d;
  };
  const per = new Map<number, number>();
  for (const n of g.nodes) per.set(of(n.id), (per.get(of(n.id)) || 0) + 1);
  const widest = Math.max(1, ...per.values());
  return Math.max(140, Math.min(560, widest * (DH + 16) + 24));
}

function fit(l: LayoutOut, width: number) {
  pipe.fitted = l.key;
  // Never smaller than text stays legible: a larger graph is panned.
  pipe.s = Math.max(0.6, Math.min(1, (width - 8) / l.width, 560 / l.height));
  pipe.tx = Math.max(4, (width - l.width * pipe.s) / 2);
  pipe.ty = 4;
}

function toolbar() {
  const set = (f: () => void) => () => (f(), renderPipeline());
  const zoom = (k: number) => set(() => zoomAt(k, (document.getElementById("pipeline")?.clientWidth || 800) / 2, 100));
  return html`<div class="tools" id="pipeline-tools">
    <input id="pipeline-search" type="search" placeholder="find a dataset or job" .value=${pipe.search}
      @input=${(e: Event) => ((pipe.search = (e.target as HTMLInputElement).value), renderPipeline())}
      @keydown=${(e: KeyboardEvent) => e.key === "Enter" && centerOnMatch()}>
    <select id="pipeline-filter" @change=${(e: Event) => ((pipe.filter = (e.target as HTMLSelectElement).value), renderPipeline())}>
      ${[["all", "every status"], ["failing", "failed or held"], ["late", "late"], ["missing", "missing"], ["running", "running"]].map(
        ([v, t]) => html`<option value=${v} ?selected=${pipe.filter === v}>${t}</option>`,
      )}
    </select>
    <button type="button" title="zoom in" @click=${zoom(1.25)}>+</button>
    <button type="button" title="zoom out" @click=${zoom(0.8)}>−</button>
    <button type="button" title="fit the graph" @click=${set(() => (pipe.fitted = ""))}>fit</button>
    ${pipe.focus
      ? html`<span class="focus">upstream and downstream of <b>${pipe.focus}</b> <button type="button" id="pipeline-all" @click=${set(() => ((pipe.focus = ""), (pipe.fitted = "")))}>show all</button></span>`
      : pipe.search && found().length === 1
        ? html`<button type="button" id="pipeline-focus" @click=${set(() => ((pipe.focus = found()[0]), (pipe.fitted = "")))}>focus on ${found()[0]}</button>`
        : nothing}
    <span class="muted small">${plural(state.datasets.length, "dataset")}, ${plural(state.jobs.length, "job")}; counts over what the grid shows: its columns, and the rows picked of a dataset with dimensions</span>
  </div>`;
}

/** found are the datasets the search finds. */
const found = () => matches().filter((id) => id.startsWith("d:")).map((id) => id.slice(2));

const matches = () => Object.keys(pipe.layout?.nodes || {}).filter((id) => pipe.search && id.slice(2).toLowerCase().includes(pipe.search.toLowerCase()));

function centerOnMatch() {
  const m = matches()[0];
  const p = m && pipe.layout!.nodes[m];
  if (!p) return;
  const width = document.getElementById("pipeline")!.clientWidth - 18;
  pipe.s = Math.max(pipe.s, 0.9);
  pipe.tx = width / 2 - (p.x + DW / 2) * pipe.s;
  pipe.ty = 120 - (p.y + DH / 2) * pipe.s;
  renderPipeline();
}

/** shows tells whether a dataset node is lit under the search and the filter. */
function shows(id: string): boolean {
  if (pipe.search && !id.toLowerCase().includes(pipe.search.toLowerCase())) return false;
  if (pipe.filter === "all") return true;
  const n: Record<string, number> = countsOf(id);
  switch (pipe.filter) {
    case "failing":
      return !!(n.FAILED || n.HOLD);
    case "late":
      return !!n.late;
    case "missing":
      return !!n.NONE;
    case "running":
      return !!n.RUNNING;
  }
  return true;
}

function edge(e: LayoutOut["edges"][0], g: LayoutIn) {
  if (!e.points.length) return nothing;
  const d = path(e.points);
  const label = g.edges.find((x) => x.v === e.v && x.w === e.w)?.label;
  const dim = pipe.search || pipe.filter !== "all" ? " dim" : "";
  return svg`<path class="edge${dim}" d=${d} marker-end="url(#arrow)" data-from=${e.v.slice(2)} data-to=${e.w.slice(2)}/>
    ${label ? svg`<text class="edge-label" x=${e.lx} y=${e.ly + 4} text-anchor="middle" data-from=${e.v.slice(2)} data-to=${e.w.slice(2)}>${label}</text>` : nothing}`;
}

const barOrder = ["READY", "RUNNING", "FAILED", "RESUBMIT", "HOLD", "NONE"];

function datasetNode(id: string, p: { x: number; y: number }) {
  const d = state.byId.get(id);
  const n: Record<string, number> = countsOf(id);
  const total = barOrder.reduce((s, k) => s + (n[k] || 0), 0);
  let x = p.x + 8;
  const bars = barOrder
    .filter((k) => n[k])
    .map((k) => {
      const w = Math.max(2, ((DW - 16) * n[k]) / total);
      const b = svg`<rect class="s-${k}" x=${x} y=${p.y + 36} width=${w} height="8" rx="1"><title>${statusName(k)}: ${n[k].toLocaleString("en")}</title></rect>`;
      x += w;
      return b;
    });
  const kind = d?.partitions ? kindLabel(d.partitions) : "no definition";
  const sub = `${kind}${d?.producer ? "" : " · source"}${n.late ? ` · ${n.late.toLocaleString("en")} late` : ""}`;
  return svg`<a href=${datasetHref(id)}><g class="node dataset${shows(id) ? "" : " dim"}${n.late ? " has-late" : ""}" data-dataset=${id}>
    <rect x=${p.x} y=${p.y} width=${DW} height=${DH} rx="5"/>
    <text x=${p.x + 8} y=${p.y + 16} class="title">${clip(id, 26)}</text>
    <text x=${p.x + 8} y=${p.y + 30} class="sub">${sub}</text>
    ${bars}<title>${id}${d?.description ? ": " + d.description : ""}</title></g></a>`;
}

function jobNode(id: string, p: { x: number; y: number }) {
  const j = state.jobById.get(id);
  if (!j) return nothing; // deleted: the graph is laid out again without it
  const live = state.claims.filter((c) => c.job === id).length;
  // A job is lit when found, or (filtering by status) when its output is.
  const lit = pipe.search ? id.toLowerCase().includes(pipe.search.toLowerCase()) : shows(j.output);
  return svg`<a href=${jobHref(id)}><g class="node job${j.paused ? " paused" : ""}${lit ? "" : " dim"}" data-job=${id}>
    <rect x=${p.x} y=${p.y} width=${JW} height=${JH} rx="17"/>
    <text x=${p.x + 14} y=${p.y + 21} class="title">${j.paused ? clip(id, 10) + " (paused)" : clip(id, 18)}</text><title>${id}${j.paused ? " (paused)" : ""}</title>
    <g class="badge${live ? " on" : ""}" data-live=${live}><circle cx=${p.x + JW - 17} cy=${p.y + JH / 2} r="11"/>
      <text x=${p.x + JW - 17} y=${p.y + JH / 2 + 4} text-anchor="middle">${live}</text><title>${plural(live, "live claim")}</title></g></g></a>`;
}

const clip = (s: string, n: number) => (s.length > n ? s.slice(0, n - 1) + "…" : s);

function zoomAt(k: number, cx: number, cy: number) {
  const s = Math.max(0.15, Math.min(2.5, pipe.s * k));
  pipe.tx = cx - ((cx - pipe.tx) * s) / pipe.s;
  pipe.ty = cy - ((cy - pipe.ty) * s) / pipe.s;
  pipe.s = s;
}

function wheel(e: WheelEvent) {
  if (!e.ctrlKey && !e.metaKey && Math.abs(e.deltaY) < 40 && !e.altKey) return; // let the page scroll on small wheel moves
  e.preventDefault();
  const box = (e.currentTarget as SVGElement).getBoundingClientRect();
  zoomAt(e.deltaY < 0 ? 1.15 : 0.87, e.clientX - box.left, e.clientY - box.top);
  renderPipeline();
}

function drag(e: PointerEvent) {
  if ((e.target as Element).closest("a")) return;
  const el = e.currentTarget as SVGElement;
  const x0 = e.clientX - pipe.tx;
  const y0 = e.clientY - pipe.ty;
  el.setPointerCapture(e.pointerId);
  el.classList.add("dragging");
  const move = (m: PointerEvent) => {
    pipe.tx = m.clientX - x0;
    pipe.ty = m.clientY - y0;
    renderPipeline();
  };
  const up = () => {
    el.classList.remove("dragging");
    el.removeEventListener("pointermove", move);
    el.removeEventListener("pointerup", up);
  };
  el.addEventListener("pointermove", move);
  el.addEventListener("pointerup", up);
}
