// A dataset's page: its definition, producer and consumers, one strip of
// its whole history (every partition, as runs), its missing and late
// partitions, its chunks that are not READY, its chunks page by page, and
// the range actions for admins; its catalog history; and for admins its
// deletion.
import { html, nothing, render, type TemplateResult } from "lit-html";
import { ApiError, gql } from "../api";
import { columnAt, count, format, isTime, ordinal, type Zoom } from "../calendar";
import { mappingLabel } from "../mapping";
import { chunkHref, datasetHref, isAdmin, loadCatalog, state, type Dataset } from "../state";
import { ago, plural, statusName } from "../util";
import { confirmDialog, jobLink, refusal, statusChip, toast } from "../ui";
import { rangeForm } from "./actions";
import { historySection } from "./history";
import { viewHash } from "./grid";
import { loadMembers, membersOf, valuesOf, type Member } from "./picker";
import type { Run } from "./rows";
import type { Dimension } from "../state";

/** dataids per request of the strip: within the server's default cost limit */
const piece = 16000;

export const datasetWatch = { current: null as null | { id: string; refresh: () => void } };

export async function datasetPage(view: HTMLElement, id: string) {
  let d = state.byId.get(id);
  if (!d) {
    await loadCatalog(); // declared since the page read the catalog?
    d = state.byId.get(id);
  }
  if (!d) return gone(view, id, `There is no dataset ${id}: it was deleted, or never declared.`);
  render(page(d, view), view);
  // Its own render root: drawn again once the members are read.
  render(definition(d), document.getElementById("definition")!);
  const def = d;
  // A DYNAMIC dimension's values with when each is expected from: the catalog lists the values alone.
  if (d.partitions?.dimensions?.some((x) => x.kind === "DYNAMIC"))
    loadMembers([d]).then(
      () => {
        const el = document.getElementById("definition");
        if (el) render(definition(def), el);
      },
      () => {},
    );
  if (isAdmin()) rangeForm(document.getElementById("dataset-actions")!, id);
  historySection(document.getElementById("dataset-history")!, { dataset: id }, 20, true);
  // Everything below comes from the whole history's runs, read once: the
  // lists are exact however long the history, and no request scans it.
  await Promise.all([
    gql(`query($d: String!) { dataset(id: $d) { location url } }`, { d: id }).then((q: any) => {
      const el = document.getElementById("where");
      if (el) el.textContent = q.dataset.location || q.dataset.url;
    }),
    strip(d),
    behindSections(d),
    chunksPage(id, ""),
  ]);
  const w = { id, refresh: debounce(() => datasetWatch.current === w && (strip(d), behindSections(d))) };
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
  if (p.dimensions) {
    const time = isTime(p.dimensions[0].kind);
    const dims = p.dimensions.map((x) =>
      x.kind === "STATIC"
        ? `${x.name}: ${x.values?.join(", ")}`
        : x.kind === "DYNAMIC"
          ? dynamicText(d.id, x, time)
          : `${x.name}: ${x.kind} from ${x.start ?? "0"}${x.end ? ` to ${x.end}` : ""}${isTime(x.kind) ? ` in ${x.timezone || "UTC"}` : ""}`,
    );
    const parts = [`one chunk per ${p.dimensions.map((x) => x.name).join(" × ")} (dataids ${p.dimensions.map((x) => x.name).join("|")}); ${dims.join("; ")}`];
    if (p.lagSeconds) parts.push(`due ${duration(p.lagSeconds)} after a window ends`);
    if (p.deadlineSeconds != null) parts.push(`late ${duration(p.deadlineSeconds)} after it ends`);
    return parts.join(", ");
  }
  if (p.kind === "STATIC") return `STATIC: ${p.values?.join(", ")}`;
  if (p.kind === "DYNAMIC") {
    const parts = ["DYNAMIC: the values added at run time (chunklock partitions add)"];
    if (p.lagSeconds) parts.push(`due ${duration(p.lagSeconds)} after a value is added`);
    if (p.deadlineSeconds != null) parts.push(`late ${duration(p.deadlineSeconds)} after it is added`);
    return parts.join(", ");
  }
  const parts = [`${p.kind} from ${p.start ?? "0"}${p.end ? ` to ${p.end}` : ""}`];
  if (isTime(p.kind)) parts.push(`in ${p.timezone || "UTC"}`);
  if (p.lagSeconds) parts.push(`due ${duration(p.lagSeconds)} after a window ends`);
  if (p.deadlineSeconds != null) parts.push(`late ${duration(p.deadlineSeconds)} after it ends`);
  return parts.join(", ");
}

/** the values of a DYNAMIC dimension its definition names (the others are counted) */
const namedValues = 12;

/**
 * dynamicText spells a DYNAMIC dimension: its values (the first few) and,
 * beside a time dimension, from when they are expected (once its members
 * are read): "customer: DYNAMIC, 3 values (acme, beta, globex), expected
 * from 2026-01-01 (globex from 2026-03-01)".
 */
function dynamicText(ds: string, x: Dimension, time: boolean): string {
  const vs = valuesOf(x);
  if (!vs.length) return `${x.name}: DYNAMIC, no value yet (chunklock partitions add ${ds} VALUE --dimension ${x.name})`;
  const named = vs.slice(0, namedValues).join(", ") + (vs.length > namedValues ? `, … ${(vs.length - namedValues).toLocaleString("en")} more` : "");
  const members = membersOf(ds, x.name);
  return `${x.name}: DYNAMIC, ${plural(vs.length, "value")} (${named})${time && members ? expectedText([...members.values()]) : ""}`;
}

/** expectedText says from when a DYNAMIC dimension's values are expected: the most common date, and the others. */
function expectedText(ms: Member[]): string {
  const froms = ms.filter((m) => m.expectedFrom);
  if (!froms.length) return "";
  const n = new Map<string, number>();
  for (const m of froms) n.set(m.expectedFrom!, (n.get(m.expectedFrom!) || 0) + 1);
  const common = [...n].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0][0];
  const others = froms.filter((m) => m.expectedFrom !== common);
  if (!others.length) return `, expected from ${common}`;
  if (others.length <= 5) return `, expected from ${common} (${others.map((m) => `${m.value} from ${m.expectedFrom}`).join(", ")})`;
  const sorted = froms.map((m) => m.expectedFrom!).sort();
  return `, expected from ${sorted[0]} to ${sorted[sorted.length - 1]} (each from its add or backfill: ${plural(others.length, "value")} not from ${common})`;
}

/** duration spells seconds as people do: 6 hours, 90 minutes, 2 days. */
function duration(s: number): string {
  if (s && s % 86400 === 0) return plural(s / 86400, "day");
  if (s && s % 3600 === 0) return plural(s / 3600, "hour");
  if (s && s % 60 === 0) return plural(s / 60, "minute");
  return plural(s, "second");
}

function page(d: Dataset, view: HTMLElement) {
  const producer = d.producer ? state.jobById.get(d.producer.id) : null;
  const readers = state.readers.get(d.id) || [];
  return html`<section class="dataset" data-dataset=${d.id}>
    <p class="crumbs"><a href="#/">pipeline</a> › ${d.id}</p>
    <h2>${d.id} <span class="kindchip">${d.partitions?.dimensions ? d.partitions.dimensions.map((x) => x.name).join(" × ") : d.partitions?.kind ?? "no definition"}</span>
      ${isAdmin() ? html`<button type="button" class="danger head-action" data-action="delete-dataset" @click=${() => deleteDataset(view, d)}>Delete dataset…</button>` : nothing}</h2>
    <div id="dataset-refusal"></div>
    ${d.description ? html`<p>${d.description}</p>` : nothing}
    <p class="muted"><span id="definition"></span><br><span id="where"></span></p>
    <p>${producer
      ? html`produced by ${jobLink(producer.id)} from ${producer.inputs.length ? producer.inputs.map((i, k) => html`${k ? ", " : ""}<a href=${datasetHref(i)}>${i}</a>${mappingLabel(producer, i) ? html` <span class="mapping">${mappingLabel(producer, i)}</span>` : nothing}`) : "its schedule"}`
      : "a source: published from outside"}
      · ${readers.length ? html`read by ${readers.map((j, k) => html`${k ? ", " : ""}${jobLink(j.id)}${mappingLabel(j, d.id) ? html` <span class="mapping">${mappingLabel(j, d.id)}</span>` : nothing}`)}` : "read by no job"}
      · <a href="#/?focus=${encodeURIComponent(d.id)}">upstream and downstream in the pipeline</a></p>
    <h3>Whole history <span class="note muted" id="strip-note"></span></h3>
    <div id="strip" class="strip"><span class="loading-bar"></span></div>
    <div id="lists"></div>
    <div id="behind"></div>
    <h3>Chunks</h3><div id="chunks"></div>
    <div id="dataset-actions"></div>
    <h3>History <span class="muted note">changes of the dataset and its credentials, newest first · <a href="#/history?dataset=${encodeURIComponent(d.id)}">all of it</a></span></h3>
    <div id="dataset-history"></div>
  </section>`;
}

/** lists draws, from the whole history's runs, the missing, late and not READY ones, newest first. */
function lists(d: Dataset, runs: Run[]) {
  const newest = (keep: (r: Run) => boolean) => runs.filter(keep).reverse();
  const show = (rs: Run[], what: string, id: string) => {
    const shown = rs.slice(0, 60);
    return rs.length
      ? html`<p class="ids" id=${id}>${shown.map(
          (r) => html`<a href=${chunkHref(d.id, r.to)} class="id s-${r.status}${r.late ? " late" : ""}" title="${statusName(r.status)}${r.late ? ", late" : ""}"
            >${r.count > 1 ? `${r.from} … ${r.to} (${r.count.toLocaleString("en")})` : r.from}</a> `,
        )}${rs.length > shown.length ? html`<span class="muted">and ${plural(rs.length - shown.length, "older run")}</span>` : nothing}</p>`
      : html`<p class="muted" id=${id}>No ${what}.</p>`;
  };
  const el = document.getElementById("lists");
  if (!el) return;
  const dynamic = d.partitions?.kind === "DYNAMIC";
  render(
    html`${dynamic
        ? html`<div class="two"><div><h3>Missing <span class="note muted">values added and not made yet, lowest first</span></h3><div id="missing-dynamic"></div></div>
          <div><h3>Late</h3><div id="late-dynamic"></div></div></div>`
        : d.partitions
        ? html`<div class="two"><div><h3>Missing <span class="note muted">newest first</span></h3>${show(newest((r) => r.status === "NONE"), "missing partition", "missing")}</div>
          <div><h3>Late</h3>${show(newest((r) => r.late), "late partition", "late")}</div></div>`
        : nothing}
      <h3>Not READY <span class="note muted">failed, held, running or resubmitted; newest first</span></h3>${show(newest((r) => r.status !== "READY" && r.status !== "NONE"), "chunk that is not READY", "not-ready")}`,
    el,
  );
}

/**
 * dynamicLists fills the missing and late lists of a DYNAMIC dataset from
 * its set (a page of `partitions` each): its runs hold only its chunks, so
 * a value added and not made yet is in none of them.
 */
async function dynamicLists(id: string) {
  const one = async (filter: string, what: string, elId: string, listId: string) => {
    const q: any = await gql(
      `query($d: String!) { partitions(dataset: $d, ${filter}, first: 60) { edges { node { dataid status late } } pageInfo { hasNextPage } } }`,
      { d: id },
    );
    const el = document.getElementById(elId);
    if (!el) return;
    const ps: { dataid: string; status: string; late: boolean }[] = q.partitions.edges.map((e: any) => e.node);
    render(
      ps.length
        ? html`<p class="ids" id=${listId}>${ps.map(
            (p) => html`<a href=${chunkHref(id, p.dataid)} class="id s-${p.status}${p.late ? " late" : ""}" title="${statusName(p.status)}${p.late ? ", late" : ""}">${p.dataid}</a> `,
          )}${q.partitions.pageInfo.hasNextPage ? html`<span class="muted">and more (chunklock chunks --dataset ${id} --${listId})</span>` : nothing}</p>`
        : html`<p class="muted" id=${listId}>No ${what}.</p>`,
      el,
    );
  };
  await Promise.all([one("status: NONE", "missing value", "missing-dynamic", "missing"), one("late: true", "late value", "late-dynamic", "late")]);
}

/** behindShown is how many values behind a dataset's page lists per dimension. */
const behindShown = 20;

/**
 * behindSections lists, for each STATIC or DYNAMIC dimension of a dataset
 * with dimensions, its values behind (missing or late chunks), lowest
 * first, each with its counts and a link to its oldest missing chunk: a
 * customer whose feed stopped is one line (valueSummaries, from the counts
 * the store keeps by value).
 */
async function behindSections(d: Dataset) {
  const el = document.getElementById("behind");
  const dims = (d.partitions?.dimensions || []).filter((x) => x.kind === "STATIC" || x.kind === "DYNAMIC");
  if (!el || !dims.length) return;
  // One request a dimension: each costs 100 + 5 a value asked.
  const pages = await Promise.all(
    dims.map((x) =>
      gql(
        `query($d: String!, $m: String!) { dataset(id: $d) { valueSummaries(dimension: $m, behind: true, first: ${behindShown}) {
          values behind hasNextPage summaries { value expectedFrom missing late oldestMissing oldestLate } } } }`,
        { d: d.id, m: x.name },
      ).then(
        (q: any) => q.dataset.valueSummaries,
        (e: Error) => e,
      ),
    ),
  );
  if (datasetWatch.current && datasetWatch.current.id !== d.id) return;
  render(
    dims.map((x, i) => behindSection(d, x, pages[i])),
    el,
  );
}

function behindSection(d: Dataset, x: Dimension, p: any) {
  const id = `behind-${x.name}`;
  const head = (note: string) => html`<h3>Behind by ${x.name} <span class="note muted">${note}</span></h3>`;
  if (p instanceof Error) return html`${head("")}<p class="error" id=${id}>${p.message}</p>`;
  const of = `${plural(p.values, x.name)}`;
  const counted = p.behind == null ? "" : `${p.behind.toLocaleString("en")} of ${of} behind`;
  if (!p.summaries.length) return html`${head(counted)}<p class="muted" id=${id}>none behind${p.values ? ` (${of})` : ""}</p>`;
  const chunk = (dataid: string | null) => (dataid ? html`<a href=${chunkHref(d.id, dataid)}>${dataid}</a>` : html`<span class="muted">—</span>`);
  const rows = `#/?by.${d.id}=${x.name}`;
  return html`${head(`${counted ? counted + "; " : ""}values with missing or late chunks, lowest first`)}
    <table class="behind" id=${id}><tr><th>${x.name}</th><th>missing</th><th>late</th><th>oldest missing</th><th>oldest late</th></tr>
      ${p.summaries.map(
        (v: any) => html`<tr data-value=${v.value}><td><a href="${rows}&q.${d.id}=${encodeURIComponent(v.value)}" title="its rows on the overview">${v.value}</a>${v.expectedFrom
            ? html` <span class="muted small">from ${v.expectedFrom}</span>`
            : nothing}</td>
          <td>${v.missing.toLocaleString("en")}</td><td>${v.late.toLocaleString("en")}</td><td>${chunk(v.oldestMissing)}</td><td>${chunk(v.oldestLate)}</td></tr>`,
      )}</table>
    ${p.hasNextPage
      ? html`<p class="muted small">and ${p.behind != null ? `${(p.behind - p.summaries.length).toLocaleString("en")} more` : "more"} behind (the first ${behindShown} are listed)</p>`
      : nothing}`;
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
  lists(d, runs);
  if (d.partitions?.kind === "DYNAMIC") await dynamicLists(d.id);
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
    // Wide enough to see: one failed hour in ten years is a few pixels.
    const w = Math.max(r.status === "READY" ? 1 : 3, (r.count / n) * width);
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

// ------------------------------------------------------------- deleting

/** gone says the dataset is not (any more), with its history and a way back. */
function gone(view: HTMLElement, id: string, msg: TemplateResult | string) {
  datasetWatch.current = null;
  render(
    html`<section class="dataset gone" id="dataset-gone"><p class="crumbs"><a href="#/">pipeline</a> › ${id}</p>
      <h2>${id} <span class="status s-NONE">not in the catalog</span></h2>
      <p>${msg}</p>
      <p><a href="#/" id="back">Back to the pipeline</a></p>
      <h3>History <span class="muted note">of the dataset id, newest first</span></h3>
      <div id="dataset-history"></div></section>`,
    view,
  );
  return historySection(document.getElementById("dataset-history")!, { dataset: id }, 20, true);
}

/** chunksIn reads the count of chunks out of the server's refusal to delete them unasked. */
const chunksIn = (msg: string) => Number((/has (\d+) chunk/.exec(msg) || [])[1] || NaN);

/**
 * deleteDataset asks, then asks the server to delete the dataset alone;
 * when the server answers that it has chunks (naming how many), it asks
 * again, naming them, before deleting them with it.
 */
async function deleteDataset(view: HTMLElement, d: Dataset) {
  const box = document.getElementById("dataset-refusal");
  const refused = (e: unknown) => (box ? render(refusal("Delete", e), box) : toast(`Delete refused: ${(e as Error).message}`, true));
  if (box) render(nothing, box);
  if (!(await confirmDialog(`Delete dataset ${d.id}`, html`Delete <b>${d.id}</b> and its credentials? Its events stay. It is refused while a job reads or writes it.`, "", "Delete"))) return;
  const del = (chunks: boolean) => gql(`mutation($d: String!, $c: Boolean) { deleteDataset(id: $d, deleteChunks: $c) }`, { d: d.id, c: chunks });
  try {
    await del(false);
  } catch (e) {
    if (!(e instanceof ApiError && e.code === "INVALID_ARGUMENT")) return refused(e);
    const n = chunksIn(e.message);
    const what = Number.isNaN(n) ? "its chunks" : plural(n, "chunk");
    const f = await confirmDialog(
      `Delete ${d.id} with ${what}`,
      html`<b>${d.id}</b> has <b id="delete-chunk-count">${what}</b>. Deleting the dataset deletes ${Number.isNaN(n) ? "them" : n === 1 ? "it" : "all of them"}: their status is gone for good (their files are not touched). The server says: <span class="reason">${e.message}</span>`,
      html`<label class="confirm-check"><input type="checkbox" name="deleteChunks" id="delete-chunks" required> delete ${what} of ${d.id}</label>`,
      `Delete ${d.id} and ${what}`,
    );
    if (!f) return;
    try {
      await del(true);
    } catch (e2) {
      return refused(e2);
    }
  }
  toast(`${d.id} deleted`);
  try {
    await loadCatalog();
  } catch {
    /* the page below says what happened; the next view reads the catalog again */
  }
  await gone(view, d.id, html`Dataset <b>${d.id}</b> is deleted.`);
}
