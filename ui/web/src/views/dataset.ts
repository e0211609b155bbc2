// A dataset's page: its definition, producer and consumers, one strip of
// its whole history (every partition, as runs), its missing and late
// partitions, its chunks that are not READY, its chunks page by page, and
// the range actions for admins.
import { html, nothing, render } from "lit-html";
import { gql } from "../api";
import { columnAt, count, format, isTime, ordinal, type Zoom } from "../calendar";
import { mappingLabel } from "../mapping";
import { chunkHref, datasetHref, isAdmin, jobHref, state, type Dataset } from "../state";
import { ago, plural, statusName } from "../util";
import { statusChip } from "../ui";
import { rangeForm } from "./actions";
import { viewHash } from "./grid";
import type { Run } from "./rows";

const piece = 20000;

export const datasetWatch = { current: null as null | { id: string; refresh: () => void } };

export async function datasetPage(view: HTMLElement, id: string) {
  const d = state.byId.get(id);
  if (!d) throw new Error(`no dataset ${id}: it may have been deleted`);
  const defined = !!d.partitions;
  const q: any = await gql(
    `query($d: String!, $defined: Boolean!) {
      dataset(id: $d) { location url partitionSummary @include(if: $defined) { missing late oldestMissing oldestLate truncated at } }
      missing: partitions(dataset: $d, status: NONE, first: 60) @include(if: $defined) { edges { node { dataid late } } pageInfo { hasNextPage } }
      late: partitions(dataset: $d, late: true, first: 60) @include(if: $defined) { edges { node { dataid status } } pageInfo { hasNextPage } }
      ${["RUNNING", "FAILED", "RESUBMIT", "HOLD"].map((s) => `${s.toLowerCase()}: chunks(dataset: $d, role: OUTPUT, status: ${s}, first: 50) { edges { node { dataid status attempt reason updatedAt } } }`).join("\n")}
    }`,
    { d: id, defined },
  );
  const notReady = ["running", "failed", "resubmit", "hold"].flatMap((k) => q[k].edges.map((e: any) => e.node));
  render(page(d, q, notReady), view);
  if (isAdmin()) rangeForm(document.getElementById("dataset-actions")!, id);
  await Promise.all([strip(d), chunksPage(id, "")]);
  const w = { id, refresh: debounce(() => datasetWatch.current === w && strip(d)) };
  datasetWatch.current = w;
}

function debounce(f: () => void) {
  let t: ReturnType<typeof setTimeout> | undefined;
  return () => {
    clearTimeout(t);
    t = setTimeout(f, 500);
  };
}

function definition(d: Dataset) {
  const p = d.partitions;
  if (!p) return "no partition definition: its chunks are whatever was produced or published";
  if (p.kind === "STATIC") return `STATIC: ${p.values?.join(", ")}`;
  const parts = [`${p.kind} from ${p.start ?? "0"}${p.end ? ` to ${p.end}` : ""}`];
  if (isTime(p.kind)) parts.push(`in ${p.timezone || "UTC"}`);
  if (p.lagSeconds) parts.push(`due ${duration(p.lagSeconds)} after a window ends`);
  if (p.deadlineSeconds != null) parts.push(`late ${duration(p.deadlineSeconds)} after it ends`);
  return parts.join(", ");
}

/** duration spells seconds as people do: 6 hours, 90 minutes, 2 days. */
function duration(s: number): string {
  if (s && s % 86400 === 0) return plural(s / 86400, "day");
  if (s && s % 3600 === 0) return plural(s / 3600, "hour");
  if (s && s % 60 === 0) return plural(s / 60, "minute");
  return plural(s, "second");
}

function page(d: Dataset, q: any, notReady: any[]) {
  const producer = d.producer ? state.jobById.get(d.producer.id) : null;
  const readers = state.readers.get(d.id) || [];
  const sum = q.dataset.partitionSummary;
  const list = (conn: any, what: string, late = false) =>
    !conn
      ? nothing
      : conn.edges.length
        ? html`<p class="ids">${conn.edges.map((e: any) => html`<a href=${chunkHref(d.id, e.node.dataid)} class="id${late || e.node.late ? " late" : ""}" title=${statusName(e.node.status || "NONE")}>${e.node.dataid}</a> `)}${conn.pageInfo.hasNextPage ? html`<span class="muted">(the first ${conn.edges.length}; more follow)</span>` : nothing}</p>`
        : html`<p class="muted">No ${what}.</p>`;
  return html`<section class="dataset" data-dataset=${d.id}>
    <p class="crumbs"><a href="#/">pipeline</a> › ${d.id}</p>
    <h2>${d.id} <span class="kindchip">${d.partitions?.kind ?? "no definition"}</span></h2>
    ${d.description ? html`<p>${d.description}</p>` : nothing}
    <p class="muted">${definition(d)}<br>${q.dataset.location || q.dataset.url}</p>
    <p>${producer
      ? html`produced by <a href=${jobHref(producer.id)}>${producer.id}</a> from ${producer.inputs.length ? producer.inputs.map((i, k) => html`${k ? ", " : ""}<a href=${datasetHref(i)}>${i}</a>${mappingLabel(producer, i) ? html` <span class="mapping">${mappingLabel(producer, i)}</span>` : nothing}`) : "its schedule"}`
      : "a source: published from outside"}
      · ${readers.length ? html`read by ${readers.map((j, k) => html`${k ? ", " : ""}<a href=${jobHref(j.id)}>${j.id}</a>${mappingLabel(j, d.id) ? html` <span class="mapping">${mappingLabel(j, d.id)}</span>` : nothing}`)}` : "read by no job"}
      · <a href="#/?focus=${encodeURIComponent(d.id)}">upstream and downstream in the pipeline</a></p>
    <h3>Whole history <span class="note muted" id="strip-note"></span></h3>
    <div id="strip" class="strip"><span class="loading-bar"></span></div>
    ${sum ? html`<p id="summary" class="${sum.late ? "error" : "muted"}">${plural(sum.missing, "partition")} missing, ${sum.late} late${sum.truncated ? " (the most recent 100,000 counted)" : ""}, as counted ${ago(sum.at)}</p>` : nothing}
    ${d.partitions ? html`<div class="two"><div><h3>Missing <span class="note muted">oldest first</span></h3>${list(q.missing, "missing partition")}</div>
      <div><h3>Late</h3>${list(q.late, "late partition", true)}</div></div>` : nothing}
    <h3>Not READY now</h3>${notReady.length
      ? html`<table id="not-ready"><tr><th>dataid</th><th>status</th><th>attempt</th><th>reason</th><th>when</th></tr>
          ${notReady.map((c) => html`<tr><td><a href=${chunkHref(d.id, c.dataid)}>${c.dataid}</a></td><td>${statusChip(c.status)}</td><td>${c.attempt}</td><td class="reason">${c.reason}</td><td title=${c.updatedAt}>${ago(c.updatedAt)}</td></tr>`)}</table>`
      : html`<p class="muted">Every chunk is READY (or missing).</p>`}
    <h3>Chunks</h3><div id="chunks"></div>
    <div id="dataset-actions"></div>
  </section>`;
}

/** chunksPage shows a page of the dataset's chunks from after. */
async function chunksPage(id: string, after: string) {
  const q: any = await gql(
    `query($d: String!, $after: String) { chunks(dataset: $d, role: OUTPUT, first: 50, after: $after) { edges { node { dataid status attempt updatedAt } } pageInfo { hasNextPage endCursor } } }`,
    { d: id, after: after || null },
  );
  const el = document.getElementById("chunks");
  if (!el) return;
  const c = q.chunks;
  render(
    c.edges.length
      ? html`<table id="chunk-list"><tr><th>dataid</th><th>status</th><th>attempt</th><th>updated</th></tr>
          ${c.edges.map((e: any) => html`<tr><td><a href=${chunkHref(id, e.node.dataid)}>${e.node.dataid}</a></td><td>${statusChip(e.node.status)}</td><td>${e.node.attempt}</td><td title=${e.node.updatedAt}>${ago(e.node.updatedAt)}</td></tr>`)}</table>
          ${c.pageInfo.hasNextPage ? html`<button type="button" id="chunks-next" @click=${() => chunksPage(id, c.pageInfo.endCursor)}>next 50</button>` : nothing}
          ${after ? html`<button type="button" @click=${() => chunksPage(id, "")}>first page</button>` : nothing}`
      : html`<p class="muted">No chunk.</p>`,
    el,
  );
}

// ------------------------------------------------------------- the strip

/** pieces splits a time definition's history into spans the server reads in one request each. */
function pieces(d: Dataset): { from: string; to: string; lo: number; hi: number }[] {
  const p = d.partitions!;
  const k = p.kind as Zoom;
  const lo = ordinal(k, p.start!);
  let hi = columnAt(k, Date.now());
  if (p.end) hi = Math.min(hi, ordinal(k, p.end));
  const out = [];
  for (let a = lo; a <= hi; a += piece) out.push({ from: format(k, a), to: format(k, Math.min(hi, a + piece - 1)), lo: a, hi: Math.min(hi, a + piece - 1) });
  return out;
}

/** readSpan reads every run of a span, following next when the runs bound ended an answer. */
async function readSpan(ds: string, from: string | null, to: string | null): Promise<{ runs: Run[]; count: number }> {
  const runs: Run[] = [];
  let n = 0;
  for (let f = from; ; ) {
    const q: any = await gql(
      `query($d: String!, $f: String, $t: String) { r: partitionRuns(dataset: $d, from: $f, to: $t, limit: ${piece}) { count next runs { from to count status late } } }`,
      { d: ds, f, t: to },
    );
    runs.push(...q.r.runs);
    n += q.r.count;
    if (!q.r.next) return { runs, count: n };
    f = q.r.next;
  }
}

async function strip(d: Dataset) {
  const el = document.getElementById("strip");
  if (!el) return;
  const time = isTime(d.partitions?.kind) && d.partitions!.start;
  const spans = time ? pieces(d) : [{ from: null, to: null, lo: 0, hi: 0 }];
  const parts = new Array<{ runs: Run[]; count: number }>(spans.length);
  const queue = spans.map((s, i) => [s, i] as const);
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let x = queue.shift(); x; x = queue.shift()) parts[x[1]] = await readSpan(d.id, x[0].from, x[0].to);
    }),
  );
  const runs = parts.flatMap((p) => p.runs);
  const total = parts.reduce((s, p) => s + p.count, 0);
  drawStrip(el, d, runs, total, time ? [spans[0].lo, spans[spans.length - 1].hi] : null);
  const w = window as any;
  if (!w.stripReadyAt) w.stripReadyAt = performance.now();
}

function drawStrip(el: HTMLElement, d: Dataset, runs: Run[], total: number, span: [number, number] | null) {
  const width = el.clientWidth || 1000;
  const k = d.partitions?.kind as Zoom;
  const counts: Record<string, number> = {};
  for (const r of runs) {
    counts[r.status] = (counts[r.status] || 0) + r.count;
    if (r.late) counts.late = (counts.late || 0) + r.count;
  }
  // Time kinds: a run is where its dataids are in time; others: as wide as its share.
  const n = span ? count(span[0], span[1]) : Math.max(total, 1);
  let at = 0;
  const segs = runs.map((r) => {
    const a = span ? ordinal(k, r.from) - span[0] : at;
    at += r.count;
    const left = (a / n) * width;
    const w = Math.max(r.status === "READY" ? 1 : 2, (r.count / n) * width);
    const href = r.count === 1 ? chunkHref(d.id, r.from) : span ? gridAt(k, ordinal(k, r.from)) : datasetHref(d.id);
    return html`<a class="seg s-${r.status}${r.late ? " late" : ""} block" href=${href} style="left: ${left.toFixed(2)}px; width: ${w.toFixed(2)}px"
      title="${r.from}${r.count > 1 ? ` … ${r.to}` : ""}: ${plural(r.count, "dataid")} ${statusName(r.status)}${r.late ? " (late)" : ""}" data-from=${r.from} data-to=${r.to}></a>`;
  });
  render(html`<div class="track" style="width: ${width}px">${segs}</div>${span ? ticks(k, span, width) : nothing}`, el);
  el.dataset.runs = String(runs.length);
  el.dataset.count = String(total);
  const note = document.getElementById("strip-note");
  if (note)
    note.textContent = `${plural(total, "dataid")} in ${plural(runs.length, "run")}: ${Object.entries(counts)
      .filter(([s]) => s !== "late")
      .map(([s, c]) => `${c.toLocaleString("en")} ${statusName(s)}`)
      .join(", ")}${counts.late ? `; ${counts.late.toLocaleString("en")} late` : ""}`;
}

/** gridAt is the overview grid at a period of kind k (hours open by day). */
function gridAt(k: Zoom, n: number): string {
  const zoom: Zoom = k === "HOURLY" ? "DAILY" : k;
  const c = k === "HOURLY" ? Math.floor(n / 24) : n;
  return viewHash({ zoom, c0: c - 30, c1: c + 30 });
}

function ticks(k: Zoom, span: [number, number], width: number) {
  const n = count(span[0], span[1]);
  const years = new Map<string, number>();
  for (let i = 0; i < n; i += Math.max(1, Math.floor(n / 400))) {
    const id = format(k, span[0] + i);
    const y = k === "HOURLY" || k === "DAILY" ? id.slice(0, 4) : id.slice(0, 4);
    if (!years.has(y)) years.set(y, i);
  }
  const marks = [...years].length > 1 ? [...years] : [[format(k, span[0]), 0] as [string, number], [format(k, span[1]), n - 1] as [string, number]];
  return html`<div class="ticks">${marks.map(([t, i]) => {
    const x = (i / n) * width;
    return html`<span class=${x > width - 90 ? "end" : ""} style="left: ${x.toFixed(1)}px">${t}</span>`;
  })}</div>`;
}
