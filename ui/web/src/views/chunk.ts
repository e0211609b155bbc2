// A chunk's page: its status rows, derived locks, the blockers of its
// producer, what waits on it downstream (each consumer's chunk that reads
// it, at the same dataid or rolled up across dimensions, and why it cannot
// be claimed), its lock graph and its events;
// live, and with the actions for admins.
import { html, nothing, render, svg } from "lit-html";
import { ApiError, gql } from "../api";
import { isTime } from "../calendar";
import { chunkHref, datasetHref, isAdmin, jobHref, mappingOf, state, type Job } from "../state";
import { ago, countdown, shortTime } from "../util";
import { jobLink, statusChip, toast } from "../ui";
import { chunkAction } from "./actions";
import { layout, path } from "./layout";
import { mappingLabel } from "../mapping";
import type { LayoutOut } from "./graphtypes";

export const watch = { chunk: null as null | { ds: string; id: string; refresh: () => void } };

const eventFields = "time actor job role from to attempt executor reason";

/**
 * downstream are the consumers that read the chunk into one chunk of
 * theirs (IDENTITY, and across dimensions a roll-up), each with the dataid
 * of that chunk.
 */
const downstream = (ds: string, id: string) =>
  (state.readers.get(ds) || [])
    .filter((j) => !mappingOf(j, ds) || mappingOf(j, ds)!.kind === "IDENTITY")
    .map((j) => ({ j, at: outputAt(j, ds, id) }))
    .filter((w): w is { j: Job; at: string } => w.at !== null);

/**
 * outputAt is the dataid of j's output that reads input ds's dataid id
 * without a mapping (SPEC §10's rules by name): each dimension of the
 * output takes the input's value of the same name, a one-dimensional
 * side's axis the other's time dimension of the same kind. Null when the
 * output has a dimension the input lacks (a fan-out: each of its values
 * reads the chunk), or when the two sides are one-axis time kinds that
 * differ.
 */
function outputAt(j: Job, ds: string, id: string): string | null {
  const axes = (x: string) => {
    const p = state.byId.get(x)?.partitions;
    return p?.dimensions ? p.dimensions.map((d) => ({ name: d.name, kind: d.kind as string })) : [{ name: "", kind: (p?.kind ?? "") as string }];
  };
  const inp = axes(ds);
  const out = axes(j.output);
  if (inp.length === 1 && out.length === 1) {
    // Two time kinds that differ (hours read into days) read nothing at
    // the same dataid without a mapping: the chunk is not waited on there.
    const [a, b] = [inp[0].kind, out[0].kind];
    return isTime(a) && isTime(b) && a !== b ? null : id;
  }
  const values = inp.length > 1 ? id.split("|") : [id];
  const parts = [];
  for (const o of out) {
    let i = o.name ? inp.findIndex((x) => x.name === o.name) : -1;
    if (i < 0 && (!o.name || inp.length === 1)) i = inp.findIndex((x) => isTime(x.kind) && x.kind === o.kind);
    if (i < 0) return null;
    parts.push(values[i]);
  }
  return parts.join("|");
}

/** waitsQuery asks for each consumer's chunk and its blockers. */
const waitsQuery = (waits: { j: Job; at: string }[]) =>
  `{ ${waits
    .map(
      (w, i) =>
        `w${i}: blockers(job: ${JSON.stringify(w.j.id)}, dataid: ${JSON.stringify(w.at)}) { dataset dataid job kind status until }
        o${i}: chunk(dataset: ${JSON.stringify(w.j.output)}, dataid: ${JSON.stringify(w.at)}) { status }`,
    )
    .join("\n")} }`;

/**
 * readWaits looks up what waits on the chunk downstream in one request.
 * The server may refuse one consumer's lookup (its output does not expect
 * that dataid): the chunk's page is still drawn, and each consumer is then
 * asked on its own, a refused one keeping its reason.
 */
async function readWaits(waits: { j: Job; at: string }[]) {
  const row = (w: { j: Job; at: string }, d: any, i: number) => ({ job: w.j.id, output: w.j.output, dataid: w.at, status: d["o" + i].status, blockers: d["w" + i] });
  if (!waits.length) return [];
  try {
    const d: any = await gql(waitsQuery(waits));
    return waits.map((w, i) => row(w, d, i));
  } catch (e) {
    // A server that cannot be reached, or a token refused, fails the page's load as before.
    if (e instanceof ApiError && (e.code === "UNAVAILABLE" || e.code === "UNAUTHENTICATED")) throw e;
    return Promise.all(
      waits.map((w) =>
        gql(waitsQuery([w])).then(
          (d: any) => row(w, d, 0),
          (e: Error) => ({ job: w.j.id, output: w.j.output, dataid: w.at, status: null, blockers: [], error: e.message }),
        ),
      ),
    );
  }
}

async function read(ds: string, id: string, producer: string | null) {
  const direct = downstream(ds, id);
  const waiting = readWaits(direct);
  const d: any = await gql(
    `query($ds: String!, $id: String!, $job: String!, $hasJob: Boolean!) {
      chunk(dataset: $ds, dataid: $id) { status location
        rows { job role status attempt executor fence token leaseExpiresAt updatedAt reason locks readFor }
        locks { dataset dataid kind job status readFor } }
      blockers(job: $job, dataid: $id) @include(if: $hasJob) { dataset dataid job kind status until }
      lockGraph(dataset: $ds, dataid: $id) { nodes { id kind job dataset dataid status } edges { from to kind locks status } }
      events(dataset: $ds, dataid: $id, first: 1000) { edges { node { ${eventFields} } } pageInfo { hasNextPage endCursor } }
    }`,
    { ds, id, job: producer || "", hasJob: !!producer },
  );
  // The log is read oldest first: a longer history reads on (20 pages at most) and shows its latest 1000 events.
  let evs = d.events.edges.map((e: any) => e.node);
  let page = d.events.pageInfo;
  for (let n = 0; page.hasNextPage && n < 20; n++) {
    const more: any = await gql(
      `query($ds: String!, $id: String!, $after: String) { events(dataset: $ds, dataid: $id, first: 1000, after: $after) { edges { node { ${eventFields} } } pageInfo { hasNextPage endCursor } } }`,
      { ds, id, after: page.endCursor },
    );
    evs = evs.concat(more.events.edges.map((e: any) => e.node)).slice(-1000);
    page = more.events.pageInfo;
  }
  d.events = evs.reverse();
  d.waits = await waiting;
  // The consumers that read the chunk into other dataids of their output
  // (a lookback, a roll-up, a fan-out): not looked up here, but named.
  d.others = (state.readers.get(ds) || []).filter((j) => !direct.some((w) => w.j.id === j.id));
  d.graph = null; // laid out after the page is drawn
  return d;
}

export async function chunkPage(view: HTMLElement, ds: string, id: string) {
  const producer = state.byId.get(ds)?.producer?.id || null;
  let loads = 0;
  let last: { key: string; graph: LayoutOut } | null = null;
  // The page is drawn as soon as its data is read; the lock graph, whose
  // layout may take a while on a slow machine, is drawn into it after. A
  // refresh whose graph has not changed keeps the layout it had.
  const load = async () => {
    const mine = ++loads;
    const d = await read(ds, id, producer);
    if (mine !== loads || watch.chunk !== w) return;
    const input = lockGraphInput(d.lockGraph);
    if (last && last.key === input.key) d.graph = last.graph;
    render(page(d, ds, id, producer, load), view);
    if (d.graph) return;
    d.graph = await layout(input);
    last = { key: input.key, graph: d.graph };
    if (mine === loads && watch.chunk === w) render(page(d, ds, id, producer, load), view);
  };
  const w = { ds, id, refresh: debounced(() => watch.chunk === w && load().catch((e) => toast(e.message, true))) };
  watch.chunk = w;
  await load();
}

function debounced(f: () => void) {
  let t: ReturnType<typeof setTimeout> | undefined;
  return () => {
    clearTimeout(t);
    t = setTimeout(f, 200);
  };
}

function page(d: any, ds: string, id: string, producer: string | null, reload: () => Promise<void>) {
  const c = d.chunk;
  const out = c.rows.find((r: any) => r.role === "OUTPUT");
  const act = (a: string) => () => chunkAction(a, ds, id, out, reload);
  return html`<section class="chunk" data-status=${c.status}>
    <p class="crumbs"><a href="#/">pipeline</a> › <a href=${datasetHref(ds)}>${ds}</a></p>
    <h2><span class="c s-${c.status} big"></span> ${ds} <span class="muted">/</span> ${id} ${statusChip(c.status, "chunk-status")}</h2>
    <p class="muted">${c.location ? c.location + " · " : ""}produced by ${producer ? jobLink(producer) : "outside (source)"}</p>
    ${isAdmin()
      ? html`<div class="actions" id="actions">
          ${producer || out ? html`<button data-action="resubmit" @click=${act("resubmit")}>Resubmit</button> <button data-action="resubmit-cascade" @click=${act("resubmit-cascade")}>Resubmit with cascade</button>` : nothing}
          ${c.status !== "HOLD" ? html`<button data-action="hold" @click=${act("hold")}>Hold</button>` : nothing}
          ${!producer ? html`<button data-action="publish" @click=${act("publish")}>Publish</button>` : nothing}
          ${out && out.status === "RUNNING" && out.token ? html`<button data-action="release" @click=${act("release")}>Release claim</button>` : nothing}</div>`
      : nothing}
    <h3>Status rows</h3>${rowsTable(c.rows)}
    <h3>Locks</h3>${c.locks.length
      ? html`<table id="locks"><tr><th>kind</th><th>holder</th><th>for</th><th>status</th></tr>${c.locks.map(
          (l: any) => html`<tr><td>${l.kind}</td><td>${l.job || "(source)"}</td><td>${readForCell(l.job, l.readFor)}</td><td>${l.status}</td></tr>`,
        )}</table>`
      : html`<p class="muted">none</p>`}
    <h3>Blockers${producer ? ` of ${producer}` : ""}</h3>${blockersTable(d.blockers, producer)}
    ${d.waits.length || d.others.length ? html`<h3>Waiting on it downstream</h3>${waitsSection(d.waits, ds, d.others)}` : nothing}
    <h3>Lock graph</h3><div class="scroll">${d.graph ? lockGraph(d.lockGraph, d.graph) : html`<p class="muted" id="lockgraph-pending">Laying out the lock graph…</p>`}</div>
    <h3>Events</h3>${eventsTable(d.events)}
  </section>`;
}

function rowsTable(rows: any[]) {
  if (!rows.length) return html`<p class="muted">No rows: never produced or published.</p>`;
  // A job reading the chunk for several of its outputs (a lookback, a
  // weekly roll-up) holds an INPUT row for each: "read for" tells them apart.
  const mapped = rows.some((r) => r.readFor);
  return html`<table id="rows"><tr><th>role</th><th>job</th>${mapped ? html`<th>read for</th>` : nothing}<th>status</th><th>attempt</th><th>executor</th><th>fence</th><th>lease</th><th>updated</th><th>reason</th><th>locks</th></tr>
    ${rows.map(
      (r) => html`<tr><td>${r.role}</td><td>${r.job || ""}</td>${mapped ? html`<td>${readForCell(r.job, r.readFor)}</td>` : nothing}<td>${statusChip(r.status)}</td><td>${r.attempt}</td><td>${r.executor}</td><td>${r.fence}</td>
        <td>${r.leaseExpiresAt ? html`<span data-until=${r.leaseExpiresAt} .textContent=${countdown(r.leaseExpiresAt)}></span>` : ""}</td>
        <td title=${r.updatedAt}>${ago(r.updatedAt)}</td><td class="reason">${r.reason}</td><td>${r.locks.join(", ")}</td></tr>`,
    )}</table>`;
}

/** readForCell links the output chunk job reads this chunk for (a mapped read), when there is one. */
function readForCell(job: string | null, readFor: string | null) {
  if (!readFor) return "";
  const out = job ? state.jobById.get(job)?.output : undefined;
  return out ? html`<a href=${chunkHref(out, readFor)}>${out} ${readFor}</a>` : readFor;
}

function blockersTable(bs: any[] | undefined, producer: string | null) {
  if (!producer) return html`<p class="muted">A source chunk: it is published from outside.</p>`;
  if (!bs || !bs.length) return html`<p class="muted">None: ${producer} may claim it now (or it is produced).</p>`;
  return html`<table id="blockers"><tr><th>kind</th><th>chunk</th><th>job</th><th>status</th><th>until</th></tr>
    ${bs.map((b) => html`<tr><td>${b.kind}</td><td><a href=${chunkHref(b.dataset, b.dataid)}>${b.dataset} ${b.dataid}</a></td><td>${b.job || ""}</td><td>${b.status}</td><td>${b.until || ""}</td></tr>`)}</table>`;
}

/**
 * waitsSection lists the consumers' chunks that are not READY (those that
 * wait), and names in one line those already produced from the chunk.
 */
function waitsSection(waits: any[], ds: string, others: Job[]) {
  const produced = waits.filter((w) => !w.error && w.status === "READY");
  const waiting = waits.filter((w) => !produced.includes(w));
  return html`${waiting.length ? waitsTable(waiting) : waits.length ? html`<p class="muted" id="waits-none">Nothing waits on it at ${waits[0].dataid}.</p>` : nothing}
    ${produced.length
      ? html`<p class="muted" id="waits-produced">Produced from it already: ${produced.map((w, i) => html`${i ? ", " : ""}<a href=${chunkHref(w.output, w.dataid)}>${w.output} ${w.dataid}</a>`)}.</p>`
      : nothing}
    ${others.length
      ? html`<p class="muted" id="waits-mapped">Read into other dataids of their outputs by ${others.map(
          (j, i) => html`${i ? ", " : ""}${jobLink(j.id)} (${mappingLabel(j, ds) || "another kind of dataid"})`,
        )}: the status rows above name their chunks that have read it.</p>`
      : nothing}`;
}

function waitsTable(waits: any[]) {
  return html`<table id="waits"><tr><th>job</th><th>its chunk</th><th>status</th><th>blocked by</th></tr>
    ${waits.map(
      (w) => html`<tr><td>${jobLink(w.job)}</td><td>${w.error ? html`${w.output} ${w.dataid}` : html`<a href=${chunkHref(w.output, w.dataid)}>${w.output} ${w.dataid}</a>`}</td><td>${w.error ? nothing : statusChip(w.status)}</td>
        <td>${w.error
          ? html`<span class="muted">not looked up: ${w.error}</span>`
          : w.blockers.length ? w.blockers.map((b: any) => html`<div>${b.kind} <a href=${chunkHref(b.dataset, b.dataid)}>${b.dataset} ${b.dataid}</a> ${b.status}</div>`) : html`<span class="muted">nothing: claimable or produced</span>`}</td></tr>`,
    )}</table>`;
}

function eventsTable(evs: any[]) {
  if (!evs.length) return html`<p class="muted">No events.</p>`;
  return html`<table id="events"><tr><th>time</th><th>actor</th><th>job</th><th>role</th><th>transition</th><th>attempt</th><th>executor</th><th>reason</th></tr>
    ${evs.map((e) => html`<tr><td title=${e.time}>${shortTime(e.time)}</td><td>${e.actor}</td><td>${e.job || ""}</td><td>${e.role}</td><td>${e.from} → ${e.to}</td><td>${e.attempt}</td><td>${e.executor}</td><td class="reason">${e.reason}</td></tr>`)}</table>`;
}

const GW = 180;
const GH = 44;

function lockGraphInput(g: any) {
  // Reads point from the chunk to the job, writes from the job to the chunk.
  const edges = g.edges.map((e: any) => (e.kind === "READS" ? { v: e.to, w: e.from, label: label(e) } : { v: e.from, w: e.to, label: label(e) }));
  const nodes = g.nodes.map((n: any) => ({ id: n.id, w: nodeWidth(n), h: GH }));
  return { key: "lock:" + JSON.stringify([nodes.map((n: any) => n.id), edges]), nodes, edges };
}

/** nodeTitle is what a node of the lock graph is named by. */
const nodeTitle = (n: any) => (n.kind === "JOB" ? n.job : n.kind === "DATASET" ? n.dataset : `${n.dataset} ${n.dataid}`);

/** nodeWidth fits a node to its title (bold, about 7.5 px a character), GW at least. */
const nodeWidth = (n: any) => Math.max(GW, Math.ceil(nodeTitle(n).length * 7.5) + 20);

const label = (e: any) => (e.status ? [e.status, ...e.locks].join(" · ") : e.kind.toLowerCase());

/**
 * lockGraph draws the laid-out graph, scaled down to the page's width but
 * never below 60 % of its size, nor narrower than 700 pixels (its labels
 * stay legible): a wider graph scrolls in its box.
 */
function lockGraph(g: any, l: LayoutOut) {
  const w = l.width + 10;
  const h = l.height + 10;
  return html`<svg id="lockgraph" width=${w} height=${h} viewBox="0 0 ${w} ${h}" style="max-width: 100%; height: auto; min-width: ${Math.round(Math.min(w, Math.max(700, 0.6 * w)))}px">
    <defs><marker id="arrow2" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>
    ${l.edges.map((e, i) => svg`<path class="edge ${g.edges[i]?.kind || ""}" d=${path(e.points)} marker-end="url(#arrow2)"/>
      <text class="edge-label" x=${e.lx} y=${e.ly + 4} text-anchor="middle">${lockGraphInput(g).edges[i].label}</text>`)}
    ${g.nodes.map((n: any) => {
      const p = l.nodes[n.id];
      if (!p) return nothing;
      const title = nodeTitle(n);
      const cls = n.kind === "CHUNK" ? `chunk s-${n.status}` : n.kind.toLowerCase();
      const body = svg`<g class="node ${cls}"><rect x=${p.x} y=${p.y} width=${nodeWidth(n)} height=${GH} rx=${n.kind === "JOB" ? 20 : 4}/>
        <text x=${p.x + 10} y=${p.y + 19} class="title">${title}</text>
        <text x=${p.x + 10} y=${p.y + 34} class="sub">${n.kind.toLowerCase()}${n.status ? " · " + n.status : ""}</text></g>`;
      return n.kind === "CHUNK" ? svg`<a href=${chunkHref(n.dataset, n.dataid)}>${body}</a>` : n.kind === "JOB" ? svg`<a href=${jobHref(n.job)}>${body}</a>` : body;
    })}
  </svg>`;
}
