// chunklock's dashboard (/ui): the pipeline, the partition grid, live
// claims, a chunk's page and a job's failures, over the GraphQL API with the
// caller's token. It is live through the events subscription (no polling);
// admins get the operator actions, each confirmed first.
import "./dashboard.css";
import { ApiError, gql, setToken, subscribe, token, Sub } from "./api";
import { addDays, ago, countdown, daysBetween, esc, h, isDate, layers, outputStatuses, shortlex, today } from "./util";

interface Dataset {
  id: string;
  description: string;
  partitions: { kind: string; deadlineSeconds: number | null } | null;
  producer: { id: string } | null;
}
interface Job {
  id: string;
  inputs: string[];
  output: string;
  paused: boolean;
  maxAttempts: number;
}
interface Claim {
  token: string | null;
  job: string;
  dataid: string;
  attempt: number;
  executor: string;
  fence: number;
  leaseExpiresAt: string;
}
interface Cell {
  status: string;
  late: boolean;
}
interface Event {
  cursor: string;
  time: string;
  actor: string;
  job: string | null;
  dataset: string;
  dataid: string;
  role: string;
  from: string;
  to: string;
  attempt: number;
  executor: string;
  reason: string;
}

const app = document.getElementById("app")!;

const state = {
  viewer: { name: "", role: "" },
  datasets: [] as Dataset[],
  jobs: [] as Job[],
  claims: [] as Claim[],
  from: "",
  to: "",
  columns: [] as string[],
  cells: new Map<string, Map<string, Cell>>(), // dataset -> dataid -> cell
  loaded: false,
  live: "connecting" as string,
  sub: null as Sub | null,
  cellIndex: new Map<string, HTMLElement>(),
  renderMs: 0,
  // partitionSummary of each dataset with a definition: missing and late
  // over all time (the grid's counts cover its range only).
  summary: new Map<string, { missing: number; late: number; truncated: boolean }>(),
};

const isAdmin = () => state.viewer.role === "admin";
const cellKey = (ds: string, id: string) => ds + "\u0000" + id;

// ---------------------------------------------------------------- start

let started = false;

async function start() {
  try {
    await loadCatalog();
  } catch (e) {
    if (e instanceof ApiError && e.code === "UNAUTHENTICATED") return showLogin(token() ? "That token was refused." : "");
    return fatal(e);
  }
  app.innerHTML = "";
  state.sub?.close();
  app.append(
    h(`<header id="top"><a href="#/" class="brand">chunklock</a>
      <nav><a href="#/">Pipeline</a> <a href="/">Playground</a></nav>
      <span id="live" class="live connecting" title="events subscription">connecting</span>
      <span class="who">${esc(state.viewer.name)} <span class="role" id="role">${esc(state.viewer.role)}</span>
      ${token() ? `<button id="signout" class="link">Sign out</button>` : ""}</span></header>`),
    h(`<main id="view"></main>`),
    h(`<div id="toast" hidden></div>`),
  );
  document.getElementById("signout")?.addEventListener("click", () => {
    setToken("");
    location.reload();
  });
  state.sub = subscribe(
    `subscription($after: String) { events(after: $after) { cursor time actor job dataset dataid role from to attempt executor reason } }`,
    {},
    (d) => onEvent(d.events as Event),
    (s, detail) => setLive(s, detail),
  );
  if (!started) {
    started = true;
    window.addEventListener("hashchange", route);
    setInterval(tick, 1000);
  }
  await route();
}

function showLogin(msg: string) {
  app.innerHTML = "";
  const f = h(`<form id="token-form" class="login">
    <h1>chunklock</h1>
    <p>This server needs a token. It stays in this browser (localStorage) until you sign out.</p>
    ${msg ? `<p class="error">${esc(msg)}</p>` : ""}
    <input id="token-input" type="password" autocomplete="off" placeholder="token" size="60" required>
    <button type="submit">Sign in</button></form>`) as HTMLFormElement;
  f.addEventListener("submit", (ev) => {
    ev.preventDefault();
    setToken((document.getElementById("token-input") as HTMLInputElement).value.trim());
    app.innerHTML = `<p class="loading">Loading…</p>`;
    start();
  });
  app.append(f);
}

function fatal(e: unknown) {
  app.innerHTML = `<p class="error">${esc((e as Error).message)}</p>`;
}

function setLive(s: string, detail?: string) {
  state.live = s;
  const el = document.getElementById("live");
  if (!el) return;
  el.className = "live " + s;
  el.textContent = s === "live" ? "live" : s === "refused" ? "refused" : "reconnecting";
  if (detail) el.title = detail;
}

function toast(msg: string, error = false) {
  const t = document.getElementById("toast")!;
  t.textContent = msg;
  t.className = error ? "error" : "";
  t.hidden = false;
  clearTimeout((toast as any).timer);
  (toast as any).timer = setTimeout(() => (t.hidden = true), 6000);
}

// ---------------------------------------------------------------- routing

async function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, query] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const view = document.getElementById("view")!;
  chunkWatch = null;
  jobWatch = null;
  try {
    if (parts[0] === "chunk" && parts.length === 3) return await chunkPage(view, parts[1], parts[2]);
    if (parts[0] === "job" && parts.length === 2) return await jobPage(view, parts[1]);
    const q = new URLSearchParams(query || "");
    await overview(view, q.get("from") || "", q.get("to") || "");
  } catch (e) {
    if (e instanceof ApiError && e.code === "UNAUTHENTICATED") return showLogin("The token was refused.");
    view.innerHTML = `<p class="error">${esc((e as Error).message)}</p>`;
  }
}

// ---------------------------------------------------------------- overview

async function loadCatalog() {
  const d = await gql(`{
    viewer { name role }
    datasets { id description partitions { kind deadlineSeconds } producer { id } }
    jobs { id inputs output paused maxAttempts }
    claims { token job dataid attempt executor fence leaseExpiresAt }
  }`);
  state.viewer = d.viewer;
  state.jobs = d.jobs;
  // Rows in pipeline order: sources first, then each job's output.
  const pos = layers(
    d.datasets.map((x: Dataset) => x.id),
    d.jobs.flatMap((j: Job) => j.inputs.map((i) => [i, j.output] as [string, string])),
  );
  state.datasets = [...d.datasets].sort((a: Dataset, b: Dataset) => {
    const p = pos.get(a.id)!, q = pos.get(b.id)!;
    return p.col - q.col || p.row - q.row;
  });
  state.claims = d.claims;
}

function defaultRange(): [string, string] {
  if (state.datasets.some((d) => d.partitions && d.partitions.kind === "DAILY")) {
    const to = today();
    return [addDays(to, -29), to];
  }
  return ["", ""];
}

async function overview(view: HTMLElement, from: string, to: string) {
  if (!from && !to && state.loaded) {
    from = state.from;
    to = state.to;
  }
  const reload = !state.loaded || from !== state.from || to !== state.to;
  if (reload) {
    view.innerHTML = `<p class="loading">Loading…</p>`;
    if (state.datasets.length === 0 || state.loaded) await loadCatalog();
    if (!from && !to) [from, to] = defaultRange();
    state.from = from;
    state.to = to;
    await loadCells();
    state.loaded = true;
  }
  view.innerHTML = "";
  view.append(
    h(`<section><h2>Pipeline <span class="muted note" id="pipeline-note"></span></h2><div id="pipeline" class="scroll"></div></section>`),
    h(`<section><h2>Partitions</h2><div id="grid-tools"></div><div id="grid" class="scroll"></div></section>`),
    h(`<section><h2>Live claims</h2><div id="claims"></div></section>`),
  );
  if (isAdmin()) view.append(rangeForm());
  renderTools();
  renderGrid();
  renderPipeline();
  renderClaims();
  if (reload) {
    loadSummaries();
    scheduleLate();
  }
}

// scheduleLate sets one timer for the moment the next cell of the grid
// turns late (a chunk becomes late by the clock, which writes no event):
// for each dataset with a deadline, its first cell neither READY nor late
// is due to be late at its window's end + the deadline. Then the grid's
// cells are read again, and the next moment is taken.
let lateTimer: any = null;
const lateRead = new Set<string>();
const scheduleLateSoon = debounce(() => state.loaded && scheduleLate(), 1000);
async function scheduleLate() {
  clearTimeout(lateTimer);
  const grid = document.getElementById("grid");
  if (grid) delete grid.dataset.nextLate;
  const next: { d: Dataset; id: string }[] = [];
  for (const d of state.datasets) {
    if (!d.partitions || d.partitions.deadlineSeconds == null) continue;
    const m = state.cells.get(d.id);
    const id = state.columns.find((c) => {
      const cell = m?.get(c);
      return cell && cell.status !== "READY" && !cell.late;
    });
    if (id) next.push({ d, id });
  }
  if (!next.length) return;
  let at = Infinity;
  try {
    const r: any = await gql(
      `{ ${next.map((n, i) => `d${i}: partitions(dataset: ${JSON.stringify(n.d.id)}, from: ${JSON.stringify(n.id)}, to: ${JSON.stringify(n.id)}, first: 1) { edges { node { windowEnd } } }`).join("\n")} }`,
    );
    next.forEach((n, i) => {
      const e = r["d" + i].edges[0];
      if (!e || !e.node.windowEnd) return;
      const t = Date.parse(e.node.windowEnd) + n.d.partitions!.deadlineSeconds! * 1000;
      // A moment already past is read again once (the server's clock may
      // lag this one's), not over and over.
      const key = cellKey(n.d.id, n.id);
      if (t <= Date.now()) {
        if (lateRead.has(key)) return;
        lateRead.add(key);
      }
      at = Math.min(at, t);
    });
  } catch (e) {
    return toast((e as Error).message, true);
  }
  if (!isFinite(at)) return;
  if (grid) grid.dataset.nextLate = new Date(at).toISOString();
  // A second past the moment (the server decides with its own clock);
  // timers longer than setTimeout's range are taken again later.
  const wait = Math.min(Math.max(at - Date.now() + 1000, 1000), 2 ** 31 - 1);
  lateTimer = setTimeout(async () => {
    try {
      await loadCells();
      if (document.getElementById("grid")) {
        renderGrid();
        renderPipeline();
      }
    } catch (e) {
      toast((e as Error).message, true);
    }
    scheduleLate();
  }, wait);
}

// loadSummaries reads every dataset's missing and late count over all time,
// after the grid is drawn (it is not needed for it), and redraws the
// pipeline with them.
async function loadSummaries() {
  try {
    const d = await gql(`{ datasets { id partitionSummary { missing late truncated } } }`);
    state.summary.clear();
    for (const x of d.datasets) if (x.partitionSummary) state.summary.set(x.id, x.partitionSummary);
    renderPipeline();
  } catch (e) {
    toast((e as Error).message, true);
  }
}

// loadCells reads the grid's range of every dataset: partitions (with
// missing and late ones) where a dataset has a definition, its OUTPUT rows
// otherwise. Datasets go in batches, one aliased field each, a few
// requests at a time; a dataset whose range needs more pages reads on.
async function loadCells() {
  const cells = new Map<string, Map<string, Cell>>();
  const vars = { from: state.from || null, to: state.to || null };
  const field = (d: Dataset, i: number, after: string | null) =>
    d.partitions
      ? `d${i}: partitions(dataset: ${JSON.stringify(d.id)}, from: $from, to: $to, first: 1000${after ? `, after: ${JSON.stringify(after)}` : ""}) {
          edges { node { dataid status late } } pageInfo { hasNextPage endCursor } }`
      : `d${i}: chunks(dataset: ${JSON.stringify(d.id)}, role: OUTPUT, from: $from, to: $to, first: 1000${after ? `, after: ${JSON.stringify(after)}` : ""}) {
          edges { node { dataid status } } pageInfo { hasNextPage endCursor } }`;
  const read = async (batch: { d: Dataset; after: string | null }[]) => {
    const r: any = await gql(`query($from: String, $to: String) { ${batch.map((b, i) => field(b.d, i, b.after)).join("\n")} }`, vars);
    const more: { d: Dataset; after: string | null }[] = [];
    batch.forEach((b, i) => {
      const conn = r["d" + i];
      let m = cells.get(b.d.id);
      if (!m) cells.set(b.d.id, (m = new Map()));
      for (const e of conn.edges) m.set(e.node.dataid, { status: e.node.status, late: !!e.node.late });
      if (conn.pageInfo.hasNextPage && m.size < 20000) more.push({ d: b.d, after: conn.pageInfo.endCursor });
    });
    return more;
  };
  let todo = state.datasets.map((d) => ({ d, after: null as string | null }));
  while (todo.length) {
    const batches: (typeof todo)[] = [];
    for (let i = 0; i < todo.length; i += 10) batches.push(todo.slice(i, i + 10));
    const next: typeof todo = [];
    // A few requests at a time: the server answers them in parallel.
    const queue = [...batches];
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let b = queue.shift(); b; b = queue.shift()) next.push(...(await read(b)));
      }),
    );
    todo = next;
  }
  state.cells = cells;
  computeColumns();
}

function computeColumns() {
  const ids = new Set<string>();
  if (isDate(state.from) && isDate(state.to)) {
    for (let d = state.from; d <= state.to; d = addDays(d, 1)) ids.add(d);
  }
  for (const m of state.cells.values()) for (const id of m.keys()) ids.add(id);
  state.columns = [...ids].sort(shortlex);
}

function renderTools() {
  const t = document.getElementById("grid-tools")!;
  const dated = isDate(state.from) && isDate(state.to);
  t.innerHTML = `<form id="range" class="tools">
    ${dated ? `<button type="button" id="prev" title="earlier">&#9664;</button>` : ""}
    <label>from <input name="from" value="${esc(state.from)}" size="12"></label>
    <label>to <input name="to" value="${esc(state.to)}" size="12"></label>
    ${dated ? `<button type="button" id="next" title="later">&#9654;</button>` : ""}
    <button type="submit">Show</button>
    <span class="legend">${outputStatuses.map((s) => `<i class="c s-${s}"></i>${s === "NONE" ? "missing" : s}`).join(" ")}
      <i class="c s-NONE late"></i>late</span>
    <span id="grid-size" class="muted"></span></form>`;
  const go = (from: string, to: string) => (location.hash = `#/?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`);
  t.querySelector("form")!.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = new FormData(ev.target as HTMLFormElement);
    go(String(f.get("from")).trim(), String(f.get("to")).trim());
  });
  if (dated) {
    const span = daysBetween(state.from, state.to) + 1;
    t.querySelector("#prev")!.addEventListener("click", () => go(addDays(state.from, -span), addDays(state.to, -span)));
    t.querySelector("#next")!.addEventListener("click", () => go(addDays(state.from, span), addDays(state.to, span)));
  }
}

function renderGrid() {
  const t0 = performance.now();
  const g = document.getElementById("grid")!;
  const cols = state.columns;
  const parts: string[] = [];
  // Cells as large as the range allows: a month fits the page with room to
  // click, a year scrolls.
  const [cw, ch] = cols.length <= 45 ? [22, 20] : cols.length <= 120 ? [16, 18] : [12, 14];
  // Rotated labels need about 16px between them: label every step-th
  // column, counted from the last (the most recent), so none overlap.
  const step = Math.max(1, Math.ceil(16 / (cw + 2)));
  parts.push(`<div class="grid" style="--cw: ${cw}px; --ch: ${ch}px; grid-template-columns: max-content repeat(${cols.length}, ${cw}px)">`);
  parts.push(`<div class="corner"></div>`);
  cols.forEach((c, i) => {
    const label = (cols.length - 1 - i) % step === 0 ? esc(c) : "";
    parts.push(`<div class="colhead" title="${esc(c)}"><span>${label}</span></div>`);
  });
  for (const d of state.datasets) {
    const m = state.cells.get(d.id) || new Map<string, Cell>();
    parts.push(`<div class="rowhead"><a href="#/?">${esc(d.id)}</a></div>`);
    const ds = esc(d.id);
    for (const c of cols) {
      const cell = m.get(c);
      // No entry: outside the dataset's definition, or no row (a dataset
      // without a definition expects nothing): left blank.
      if (!cell) parts.push(`<i class="c blank" data-ds="${ds}" data-id="${esc(c)}" data-st=""></i>`);
      else parts.push(`<i class="c s-${cell.status}${cell.late ? " late" : ""}" data-ds="${ds}" data-id="${esc(c)}" data-st="${cell.status}"></i>`);
    }
  }
  parts.push(`</div>`);
  g.innerHTML = parts.join("");
  state.cellIndex.clear();
  for (const el of g.querySelectorAll<HTMLElement>("i.c")) state.cellIndex.set(cellKey(el.dataset.ds!, el.dataset.id!), el);
  g.querySelectorAll<HTMLAnchorElement>(".rowhead a").forEach((a, i) => (a.href = datasetLink(state.datasets[i].id)));
  g.onclick = (ev) => {
    const el = ev.target as HTMLElement;
    if (!el.dataset.ds) return;
    if (ev.shiftKey && document.getElementById("range-op")) return selectCell(el.dataset.ds, el.dataset.id!);
    location.hash = `#/chunk/${encodeURIComponent(el.dataset.ds)}/${encodeURIComponent(el.dataset.id!)}`;
  };
  markSelection();
  g.onmouseover = (ev) => {
    const el = ev.target as HTMLElement;
    if (el.dataset.ds && !el.title) {
      const c = state.cells.get(el.dataset.ds)?.get(el.dataset.id!);
      el.title = `${el.dataset.ds} ${el.dataset.id}: ${c ? c.status : "no row"}${c && c.late ? " (late)" : ""}`;
    }
  };
  state.renderMs = performance.now() - t0;
  const size = document.getElementById("grid-size");
  if (size) size.textContent = `${state.datasets.length} × ${cols.length}`;
  g.dataset.ready = "1";
  // For the benchmark (bench/uigrid): render time, and when the grid was
  // first ready since the page's navigation started.
  g.dataset.renderMs = state.renderMs.toFixed(1);
  if (!(window as any).gridReadyAt) (window as any).gridReadyAt = performance.now();
}

// Range selection (admins): a shift-click marks one end, a shift-click on
// another cell of the same row the other, and the range form is filled with
// the row's dataset and both ends.
let anchor: { ds: string; id: string } | null = null;
let selection: { ds: string; from: string; to: string } | null = null;

function selectCell(ds: string, id: string) {
  if (!anchor || anchor.ds !== ds) {
    anchor = { ds, id };
    selection = null;
    markSelection();
    toast(`Shift-click another cell of ${ds} to select the range.`);
    return;
  }
  const [from, to] = shortlex(anchor.id, id) <= 0 ? [anchor.id, id] : [id, anchor.id];
  anchor = null;
  selection = { ds, from, to };
  markSelection();
  const f = document.getElementById("range-op") as HTMLFormElement | null;
  if (!f) return;
  (f.elements.namedItem("dataset") as HTMLSelectElement).value = ds;
  (f.elements.namedItem("from") as HTMLInputElement).value = from;
  (f.elements.namedItem("to") as HTMLInputElement).value = to;
  f.scrollIntoView({ block: "nearest" });
  toast(`Selected ${ds} from ${from} to ${to}: choose the operation below.`);
}

function markSelection() {
  document.querySelectorAll("#grid i.c.sel, #grid i.c.anchor").forEach((el) => el.classList.remove("sel", "anchor"));
  if (anchor) state.cellIndex.get(cellKey(anchor.ds, anchor.id))?.classList.add("anchor");
  if (selection) {
    const { ds, from, to } = selection;
    for (const c of state.columns) {
      if (shortlex(c, from) >= 0 && shortlex(c, to) <= 0) state.cellIndex.get(cellKey(ds, c))?.classList.add("sel");
    }
  }
}

function datasetLink(id: string): string {
  const job = state.datasets.find((d) => d.id === id)?.producer;
  return job ? `#/job/${encodeURIComponent(job.id)}` : `#/`;
}

function counts(ds: string): Record<string, number> {
  const out: Record<string, number> = {};
  const m = state.cells.get(ds);
  if (!m) return out;
  for (const c of m.values()) {
    out[c.status] = (out[c.status] || 0) + 1;
    if (c.late) out.late = (out.late || 0) + 1;
  }
  return out;
}

function renderPipeline() {
  const el = document.getElementById("pipeline");
  if (!el) return;
  const ids: string[] = [];
  const edges: [string, string][] = [];
  for (const d of state.datasets) ids.push("d:" + d.id);
  for (const j of state.jobs) {
    ids.push("j:" + j.id);
    for (const i of j.inputs) edges.push(["d:" + i, "j:" + j.id]);
    edges.push(["j:" + j.id, "d:" + j.output]);
  }
  const pos = layers(ids, edges);
  const note = document.getElementById("pipeline-note");
  if (note) {
    note.textContent =
      state.from || state.to
        ? `chunks by status from ${state.from || "the first"} to ${state.to || "the last"} (the grid's range); missing and late over all time`
        : "chunks by status; missing and late over all time";
  }
  const W = 210, H = 80, GX = 70, GY = 18;
  const xy = (id: string) => {
    const p = pos.get(id)!;
    return { x: 10 + p.col * (W + GX), y: 10 + p.row * (H + GY) };
  };
  let maxX = 0, maxY = 0;
  for (const id of ids) {
    const p = xy(id);
    maxX = Math.max(maxX, p.x + W + 10);
    maxY = Math.max(maxY, p.y + H + 10);
  }
  const live = new Map<string, number>();
  for (const c of state.claims) live.set(c.job, (live.get(c.job) || 0) + 1);
  const svg: string[] = [`<svg id="pipeline-svg" width="${maxX}" height="${maxY}" viewBox="0 0 ${maxX} ${maxY}">`];
  for (const [a, b] of edges) {
    if (!pos.has(a) || !pos.has(b)) continue;
    const p = xy(a), q = xy(b);
    const x1 = p.x + W, y1 = p.y + H / 2, x2 = q.x, y2 = q.y + H / 2, mx = (x1 + x2) / 2;
    svg.push(`<path class="edge" d="M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}" marker-end="url(#arrow)"/>`);
  }
  svg.push(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>`);
  for (const d of state.datasets) {
    const { x, y } = xy("d:" + d.id);
    const n = counts(d.id);
    let cx = x + 8;
    const pills = outputStatuses
      .filter((s) => n[s])
      .map((s) => {
        const w = 8 + String(n[s]).length * 7;
        const r = `<g class="pill" data-status="${s}"><rect x="${cx}" y="${y + 38}" width="${w}" height="16" rx="3" class="s-${s}"/><text x="${cx + w / 2}" y="${y + 50}" text-anchor="middle">${n[s]}</text><title>${s === "NONE" ? "missing" : s}: ${n[s]} in the grid's range</title></g>`;
        cx += w + 3;
        return r;
      })
      .join("");
    const sum = state.summary.get(d.id);
    const all = sum
      ? `<text x="${x + 8}" y="${y + 70}" class="sub all-time${sum.late ? " has-late" : ""}" data-missing="${sum.missing}" data-late="${sum.late}">all time: ${sum.missing} missing · ${sum.late} late${sum.truncated ? " (recent only)" : ""}</text>`
      : "";
    svg.push(`<g class="node dataset" data-dataset="${esc(d.id)}"><rect x="${x}" y="${y}" width="${W}" height="${H}" rx="4"/>
      <text x="${x + 8}" y="${y + 18}" class="title">${esc(d.id)}</text>
      <text x="${x + 8}" y="${y + 31}" class="sub">${d.partitions ? esc(d.partitions.kind.toLowerCase()) : "no definition"}${d.producer ? "" : " · source"}</text>${pills}${all}</g>`);
  }
  for (const j of state.jobs) {
    const { x, y } = xy("j:" + j.id);
    const nLive = live.get(j.id) || 0;
    svg.push(`<a href="#/job/${encodeURIComponent(j.id)}"><g class="node job${j.paused ? " paused" : ""}" data-job="${esc(j.id)}"><rect x="${x}" y="${y + 14}" width="${W}" height="${H - 28}" rx="22"/>
      <text x="${x + 16}" y="${y + 37}" class="title">${esc(j.id)}</text>
      <text x="${x + 16}" y="${y + 51}" class="sub">job${j.paused ? " · paused" : ""}</text>
      <g class="badge${nLive ? " on" : ""}" data-live="${nLive}"><circle cx="${x + W - 22}" cy="${y + H / 2}" r="13"/><text x="${x + W - 22}" y="${y + H / 2 + 4}" text-anchor="middle">${nLive}</text><title>${nLive} live claims</title></g></g></a>`);
  }
  svg.push(`</svg>`);
  el.innerHTML = svg.join("");
}

function renderClaims() {
  const el = document.getElementById("claims");
  if (!el) return;
  if (!state.claims.length) {
    el.innerHTML = `<p class="muted">No live claims.</p>`;
    return;
  }
  el.innerHTML = `<table class="claims"><thead><tr><th>job</th><th>dataid</th><th>executor</th><th>attempt</th><th>lease</th>${isAdmin() ? "<th></th>" : ""}</tr></thead><tbody>${state.claims
    .map(
      (c, i) => `<tr><td><a href="#/job/${encodeURIComponent(c.job)}">${esc(c.job)}</a></td>
      <td><a href="${chunkHref(outputOf(c.job), c.dataid)}">${esc(c.dataid)}</a></td><td>${esc(c.executor)}</td><td>${c.attempt}</td>
      <td class="lease" data-until="${esc(c.leaseExpiresAt)}">${countdown(c.leaseExpiresAt)}</td>
      ${isAdmin() && c.token ? `<td><button data-action="release" data-i="${i}">Release</button></td>` : isAdmin() ? "<td></td>" : ""}</tr>`,
    )
    .join("")}</tbody></table>`;
  el.querySelectorAll<HTMLButtonElement>("button[data-action=release]").forEach((b) =>
    b.addEventListener("click", () => releaseClaim(state.claims[Number(b.dataset.i)])),
  );
}

function outputOf(job: string): string {
  return state.jobs.find((j) => j.id === job)?.output || "";
}

function chunkHref(ds: string, id: string) {
  return `#/chunk/${encodeURIComponent(ds)}/${encodeURIComponent(id)}`;
}

// tick counts the leases down; a claim whose lease reaches zero is read
// again once (a heartbeat may have extended it, which makes no event).
const reread = new Set<string>();
function tick() {
  let stale = false;
  document.querySelectorAll<HTMLElement>("[data-until]").forEach((td) => {
    td.textContent = countdown(td.dataset.until!);
    const k = td.dataset.until!;
    if (Date.parse(k) <= Date.now() && !reread.has(k)) {
      reread.add(k);
      stale = true;
    }
  });
  if (stale) refreshClaims();
}

let claimsTimer: any = null;
function refreshClaims() {
  clearTimeout(claimsTimer);
  claimsTimer = setTimeout(async () => {
    try {
      const d = await gql(`{ claims { token job dataid attempt executor fence leaseExpiresAt } }`);
      state.claims = d.claims;
      renderClaims();
      renderPipeline();
    } catch (e) {
      toast((e as Error).message, true);
    }
  }, 200);
}

// ---------------------------------------------------------------- live

let chunkWatch: { ds: string; id: string; refresh: () => void } | null = null;

function onEvent(ev: Event) {
  if (ev.role === "OUTPUT") {
    let m = state.cells.get(ev.dataset);
    if (m && state.loaded) {
      const inRange = (!state.from || shortlex(ev.dataid, state.from) >= 0) && (!state.to || shortlex(ev.dataid, state.to) <= 0);
      if (inRange) {
        const old = m.get(ev.dataid);
        m.set(ev.dataid, { status: ev.to, late: ev.to === "READY" ? false : !!(old && old.late) });
        const el = state.cellIndex.get(cellKey(ev.dataset, ev.dataid));
        if (el) {
          for (const k of Array.from(el.classList)) if (k.startsWith("s-") || k === "blank" || k === "late") el.classList.remove(k);
          el.classList.add(`s-${ev.to}`);
          if (m.get(ev.dataid)!.late) el.classList.add("late");
          el.dataset.st = ev.to;
          el.title = "";
          schedulePipeline();
          // A chunk that leaves READY may be late already, or later.
          if (ev.to !== "READY" && state.datasets.find((d) => d.id === ev.dataset)?.partitions?.deadlineSeconds != null) scheduleLateSoon();
        } else if (document.getElementById("grid")) {
          computeColumns();
          scheduleGrid();
        }
      }
    }
    if (ev.from === "RUNNING" || ev.to === "RUNNING") refreshClaims();
  }
  if (chunkWatch && ev.dataset === chunkWatch.ds && ev.dataid === chunkWatch.id) chunkWatch.refresh();
  // A job's page follows its chunks' failures and claims.
  if (jobWatch && ev.job === jobWatch.id && ev.role === "OUTPUT" && (ev.to === "FAILED" || ev.to === "HOLD" || ev.from === "RUNNING" || ev.to === "RUNNING")) jobWatch.refresh();
}

let pipeTimer: any = null;
function schedulePipeline() {
  clearTimeout(pipeTimer);
  pipeTimer = setTimeout(renderPipeline, 250);
}
let gridTimer: any = null;
function scheduleGrid() {
  clearTimeout(gridTimer);
  gridTimer = setTimeout(() => {
    renderGrid();
    renderPipeline();
  }, 250);
}

// ---------------------------------------------------------------- actions

function confirmDialog(title: string, body: string, extra = ""): Promise<HTMLFormElement | null> {
  return new Promise((resolve) => {
    const d = h(`<div class="modal" role="dialog" aria-modal="true"><form class="box" id="confirm">
      <h3>${esc(title)}</h3><p>${body}</p>${extra}
      <div class="buttons"><button type="button" id="cancel">Cancel</button> <button type="submit" id="confirm-ok" class="danger">Confirm</button></div>
      </form></div>`);
    const f = d.querySelector("form")!;
    f.addEventListener("submit", (ev) => {
      ev.preventDefault();
      d.remove();
      resolve(f);
    });
    d.querySelector("#cancel")!.addEventListener("click", () => {
      d.remove();
      resolve(null);
    });
    document.body.append(d);
    (d.querySelector("#confirm-ok") as HTMLElement).focus();
  });
}

async function act(label: string, run: () => Promise<string>) {
  try {
    toast(`${label}: ${await run()}`);
  } catch (e) {
    toast(`${label} refused: ${(e as ApiError).code || ""} ${(e as Error).message}`, true);
  }
}

async function releaseClaim(c: Claim) {
  if (!(await confirmDialog("Release claim", `Give back ${esc(c.job)} ${esc(c.dataid)} held by ${esc(c.executor)}? The executor's token goes stale; no attempt is counted.`))) return;
  await act("release", async () => {
    await gql(`mutation($t: String!) { release(token: $t) }`, { t: c.token });
    refreshClaims();
    return "released";
  });
}

function rangeForm(): HTMLElement {
  const s = h(`<section><h2>Range operations</h2><form id="range-op" class="tools">
    <select name="op"><option value="publishRange">publish</option><option value="resubmitRange">resubmit</option><option value="holdRange">hold</option></select>
    <select name="dataset">${state.datasets.map((d) => `<option>${esc(d.id)}</option>`).join("")}</select>
    <label>from <input name="from" value="${esc(state.from)}" size="12" required></label>
    <label>to <input name="to" value="${esc(state.to)}" size="12" required></label>
    <label><input type="checkbox" name="cascade"> cascade (resubmit)</label>
    <label>reason (hold) <input name="reason" size="20"></label>
    <button type="submit" data-action="range">Apply…</button></form>
    <p class="muted">Shift-click two cells of one row in the grid to fill in its dataset and range.</p><pre id="range-result" class="muted"></pre></section>`);
  s.querySelector("form")!.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = new FormData(ev.target as HTMLFormElement);
    const op = String(f.get("op")), ds = String(f.get("dataset")), from = String(f.get("from")), to = String(f.get("to"));
    const cascade = f.get("cascade") === "on", reason = String(f.get("reason") || "");
    const what = op === "publishRange" ? "Publish" : op === "resubmitRange" ? `Resubmit${cascade ? " (with cascade)" : ""}` : "Hold";
    if (!(await confirmDialog(`${what} a range`, `${what} every chunk of <b>${esc(ds)}</b> from ${esc(from)} to ${esc(to)}?`))) return;
    selection = null;
    markSelection();
    const args = op === "resubmitRange" ? ", cascade: $cascade" : op === "holdRange" ? ", reason: $reason" : "";
    const decl = op === "resubmitRange" ? ", $cascade: Boolean" : op === "holdRange" ? ", $reason: String" : "";
    await act(what, async () => {
      const d = await gql(
        `mutation($d: String!, $from: String!, $to: String!${decl}) { r: ${op}(dataset: $d, from: $from, to: $to${args}) { changed unchanged skipped { dataid code reason } } }`,
        { d: ds, from, to, cascade, reason },
      );
      const r = d.r;
      document.getElementById("range-result")!.textContent =
        `${r.changed} changed, ${r.unchanged} unchanged, ${r.skipped.length} skipped` +
        r.skipped.slice(0, 20).map((s: any) => `\n  ${s.dataid}: ${s.code} ${s.reason}`).join("");
      return `${r.changed} changed, ${r.skipped.length} skipped`;
    });
  });
  return s;
}

// ---------------------------------------------------------------- chunk page

async function chunkPage(view: HTMLElement, ds: string, id: string) {
  if (!state.datasets.length) await loadCatalog();
  const dataset = state.datasets.find((d) => d.id === ds);
  const producer = dataset?.producer?.id || null;
  const load = async () => {
    const d = await gql(
      `query($ds: String!, $id: String!, $job: String!, $hasJob: Boolean!) {
        chunk(dataset: $ds, dataid: $id) { status location
          rows { job role status attempt executor fence token leaseExpiresAt updatedAt reason locks }
          locks { dataset dataid kind job status } }
        blockers(job: $job, dataid: $id) @include(if: $hasJob) { dataset dataid job kind status until }
        lockGraph(dataset: $ds, dataid: $id) { nodes { id kind job dataset dataid status } edges { from to kind locks status } }
        events(dataset: $ds, dataid: $id, first: 1000) { edges { node { time actor job role from to attempt executor reason } } pageInfo { hasNextPage endCursor } }
      }`,
      { ds, id, job: producer || "", hasJob: !!producer },
    );
    // The log is read oldest first: a chunk with a longer history reads on
    // (up to 20 pages) and shows its latest 1000 events.
    let evs = d.events.edges.map((e: any) => e.node);
    let page = d.events.pageInfo;
    for (let n = 0; page.hasNextPage && n < 20; n++) {
      const more: any = await gql(
        `query($ds: String!, $id: String!, $after: String) { events(dataset: $ds, dataid: $id, first: 1000, after: $after) {
          edges { node { time actor job role from to attempt executor reason } } pageInfo { hasNextPage endCursor } } }`,
        { ds, id, after: page.endCursor },
      );
      evs = evs.concat(more.events.edges.map((e: any) => e.node)).slice(-1000);
      page = more.events.pageInfo;
    }
    d.events = evs.reverse();
    render(d);
  };
  const render = (d: any) => {
    const c = d.chunk;
    const out = c.rows.find((r: any) => r.role === "OUTPUT");
    const admin = isAdmin();
    const actions = admin
      ? `<div class="actions" id="actions">
        ${producer || out ? `<button data-action="resubmit">Resubmit</button> <button data-action="resubmit-cascade">Resubmit with cascade</button>` : ""}
        <button data-action="hold">Hold</button>
        ${!producer ? `<button data-action="publish">Publish</button>` : ""}
        ${out && out.status === "RUNNING" && out.token ? `<button data-action="release">Release claim</button>` : ""}</div>`
      : "";
    view.innerHTML = `<section class="chunk" data-status="${esc(c.status)}">
      <p><a href="#/">&larr; pipeline</a></p>
      <h2><span class="c s-${esc(c.status)} big"></span> ${esc(ds)} <span class="muted">/</span> ${esc(id)}
        <span id="chunk-status" class="status s-${esc(c.status)}">${esc(c.status === "NONE" ? "missing" : c.status)}</span></h2>
      <p class="muted">${c.location ? esc(c.location) + " · " : ""}produced by ${producer ? `<a href="#/job/${encodeURIComponent(producer)}">${esc(producer)}</a>` : "outside (source)"}</p>
      ${actions}
      <h3>Status rows</h3>${rowsTable(c.rows)}
      <h3>Locks</h3>${c.locks.length ? `<table><tr><th>kind</th><th>holder</th><th>status</th></tr>${c.locks.map((l: any) => `<tr><td>${esc(l.kind)}</td><td>${esc(l.job || "(source)")}</td><td>${esc(l.status)}</td></tr>`).join("")}</table>` : `<p class="muted">none</p>`}
      <h3>Blockers${producer ? ` of ${esc(producer)}` : ""}</h3>${blockersTable(d.blockers, producer)}
      <h3>Lock graph</h3><div class="scroll">${lockGraphSvg(d.lockGraph)}</div>
      <h3>Events</h3>${eventsTable(d.events)}
    </section>`;
    view.querySelectorAll<HTMLButtonElement>("#actions button").forEach((b) => b.addEventListener("click", () => chunkAction(b.dataset.action!, ds, id, out, load)));
  };
  const watch = { ds, id, refresh: debounce(() => chunkWatch === watch && load().catch((e) => toast(e.message, true)), 200) };
  chunkWatch = watch;
  await load();
}

function debounce(f: () => void, ms: number) {
  let t: any = null;
  return () => {
    clearTimeout(t);
    t = setTimeout(f, ms);
  };
}

async function chunkAction(action: string, ds: string, id: string, out: any, reload: () => Promise<void>) {
  const name = `<b>${esc(ds)}</b> ${esc(id)}`;
  switch (action) {
    case "resubmit":
    case "resubmit-cascade": {
      const cascade = action === "resubmit-cascade";
      if (!(await confirmDialog(cascade ? "Resubmit with cascade" : "Resubmit", `Produce ${name} again${cascade ? ", and invalidate every chunk computed from it downstream" : ""}?`))) return;
      return act("resubmit", async () => {
        const d = await gql(`mutation($d: String!, $i: String!, $c: Boolean) { resubmit(dataset: $d, dataid: $i, cascade: $c) { dataset dataid } }`, { d: ds, i: id, c: cascade });
        await reload();
        return `${d.resubmit.length} chunk(s) now RESUBMIT`;
      });
    }
    case "hold": {
      const f = await confirmDialog("Hold", `Freeze ${name}? Nobody reads or writes it until it is resubmitted.`, `<label>reason <input name="reason" size="40"></label>`);
      if (!f) return;
      const reason = String(new FormData(f).get("reason") || "");
      return act("hold", async () => {
        await gql(`mutation($d: String!, $i: String!, $r: String) { hold(dataset: $d, dataid: $i, reason: $r) { status } }`, { d: ds, i: id, r: reason });
        await reload();
        return "on HOLD";
      });
    }
    case "publish":
      if (!(await confirmDialog("Publish", `Mark ${name} READY for its consumers?`))) return;
      return act("publish", async () => {
        await gql(`mutation($d: String!, $i: String!) { publish(dataset: $d, dataid: $i) { status } }`, { d: ds, i: id });
        await reload();
        return "READY";
      });
    case "release":
      if (!(await confirmDialog("Release claim", `Give back the live claim on ${name} held by ${esc(out.executor)}?`))) return;
      return act("release", async () => {
        await gql(`mutation($t: String!) { release(token: $t) }`, { t: out.token });
        await reload();
        return "released";
      });
  }
}

function rowsTable(rows: any[]): string {
  if (!rows.length) return `<p class="muted">No rows: never produced or published.</p>`;
  return `<table id="rows"><tr><th>role</th><th>job</th><th>status</th><th>attempt</th><th>executor</th><th>fence</th><th>lease</th><th>updated</th><th>reason</th><th>locks</th></tr>${rows
    .map(
      (r) => `<tr><td>${esc(r.role)}</td><td>${esc(r.job || "")}</td><td><span class="status s-${esc(r.status)}">${esc(r.status)}</span></td><td>${r.attempt}</td><td>${esc(r.executor)}</td><td>${r.fence}</td>
      <td>${r.leaseExpiresAt ? `<span data-until="${esc(r.leaseExpiresAt)}">${countdown(r.leaseExpiresAt)}</span>` : ""}</td><td title="${esc(r.updatedAt)}">${ago(r.updatedAt)}</td><td>${esc(r.reason)}</td><td>${esc(r.locks.join(", "))}</td></tr>`,
    )
    .join("")}</table>`;
}

function blockersTable(bs: any[] | undefined, producer: string | null): string {
  if (!producer) return `<p class="muted">A source chunk: it is published from outside.</p>`;
  if (!bs || !bs.length) return `<p class="muted">None: ${esc(producer)} may claim it now (or it is produced).</p>`;
  return `<table id="blockers"><tr><th>kind</th><th>chunk</th><th>job</th><th>status</th><th>until</th></tr>${bs
    .map((b) => `<tr><td>${esc(b.kind)}</td><td><a href="${chunkHref(b.dataset, b.dataid)}">${esc(b.dataset)} ${esc(b.dataid)}</a></td><td>${esc(b.job || "")}</td><td>${esc(b.status)}</td><td>${esc(b.until || "")}</td></tr>`)
    .join("")}</table>`;
}

function eventsTable(evs: any[]): string {
  if (!evs.length) return `<p class="muted">No events.</p>`;
  return `<table id="events"><tr><th>time</th><th>actor</th><th>job</th><th>role</th><th>transition</th><th>attempt</th><th>executor</th><th>reason</th></tr>${evs
    .map((e) => `<tr><td title="${esc(e.time)}">${esc(e.time.replace("T", " ").slice(0, 19))}</td><td>${esc(e.actor)}</td><td>${esc(e.job || "")}</td><td>${esc(e.role)}</td><td>${esc(e.from)} &rarr; ${esc(e.to)}</td><td>${e.attempt}</td><td>${esc(e.executor)}</td><td>${esc(e.reason)}</td></tr>`)
    .join("")}</table>`;
}

function lockGraphSvg(g: any): string {
  const ids = g.nodes.map((n: any) => n.id);
  // Reads point from the chunk to the job, writes from the job to the chunk.
  const flow: [string, string][] = g.edges.map((e: any) => (e.kind === "READS" ? [e.to, e.from] : [e.from, e.to]));
  const pos = layers(ids, flow);
  const W = 170, H = 44, GX = 130, GY = 16;
  const xy = (id: string) => {
    const p = pos.get(id)!;
    return { x: 10 + p.col * (W + GX), y: 10 + p.row * (H + GY) };
  };
  let mx = 0, my = 0;
  for (const id of ids) {
    const p = xy(id);
    mx = Math.max(mx, p.x + W + 10);
    my = Math.max(my, p.y + H + 10);
  }
  // Shrunk to the page's width when that keeps its text legible; a larger
  // graph scrolls in its box instead.
  const fit = mx <= 2000 ? ` style="max-width: 100%; height: auto"` : "";
  const out: string[] = [`<svg id="lockgraph" width="${mx}" height="${my}" viewBox="0 0 ${mx} ${my}"${fit}><defs><marker id="arrow2" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>`];
  g.edges.forEach((e: any, i: number) => {
    const [a, b] = flow[i];
    if (!pos.has(a) || !pos.has(b)) return;
    const p = xy(a), q = xy(b);
    const x1 = p.x + W, y1 = p.y + H / 2, x2 = q.x, y2 = q.y + H / 2, m = (x1 + x2) / 2;
    const label = e.status ? [e.status, ...e.locks].join(" · ") : e.kind.toLowerCase();
    out.push(`<path class="edge ${e.kind}" d="M${x1},${y1} C${m},${y1} ${m},${y2} ${x2},${y2}" marker-end="url(#arrow2)"/>
      <text class="edge-label" x="${m}" y="${(y1 + y2) / 2 - 4}" text-anchor="middle">${esc(label)}</text>`);
  });
  for (const n of g.nodes) {
    const { x, y } = xy(n.id);
    const title = n.kind === "JOB" ? n.job : n.kind === "DATASET" ? n.dataset : `${n.dataset} ${n.dataid}`;
    const cls = n.kind === "CHUNK" ? `chunk s-${n.status}` : n.kind.toLowerCase();
    const body = `<g class="node ${cls}"><rect x="${x}" y="${y}" width="${W}" height="${H}" rx="${n.kind === "JOB" ? 20 : 4}"/>
      <text x="${x + 10}" y="${y + 19}" class="title">${esc(title)}</text>
      <text x="${x + 10}" y="${y + 34}" class="sub">${esc(n.kind.toLowerCase())}${n.status ? " · " + esc(n.status) : ""}</text></g>`;
    out.push(n.kind === "CHUNK" ? `<a href="${chunkHref(n.dataset, n.dataid)}">${body}</a>` : n.kind === "JOB" ? `<a href="#/job/${encodeURIComponent(n.job)}">${body}</a>` : body);
  }
  out.push(`</svg>`);
  return out.join("");
}

// ---------------------------------------------------------------- job page

// A job's failure events: its OUTPUT rows' transitions to FAILED (a fail,
// or a lease that expired) and to HOLD (attempts used up, or an operator's
// hold), with their reasons, newest first. The event log is read oldest
// first, so this pages through the job's events (up to failureScanPages
// pages of 1000) and keeps the last failureKeep.
const failureScanPages = 50;
const failureKeep = 100;

async function failureEvents(job: string): Promise<{ events: Event[]; truncated: boolean }> {
  const keep: Event[] = [];
  let after: string | null = null;
  for (let page = 0; page < failureScanPages; page++) {
    const d: any = await gql(
      `query($j: String!, $after: String) { events(job: $j, first: 1000, after: $after) {
        edges { node { cursor time actor job dataset dataid role from to attempt executor reason } } pageInfo { hasNextPage endCursor } } }`,
      { j: job, after },
    );
    for (const e of d.events.edges) {
      const ev = e.node as Event;
      if (ev.role === "OUTPUT" && (ev.to === "FAILED" || ev.to === "HOLD")) keep.push(ev);
    }
    if (keep.length > failureKeep) keep.splice(0, keep.length - failureKeep);
    if (!d.events.pageInfo.hasNextPage) return { events: keep.reverse(), truncated: false };
    after = d.events.pageInfo.endCursor;
  }
  return { events: keep.reverse(), truncated: true };
}

let jobWatch: { id: string; refresh: () => void } | null = null;

async function jobPage(view: HTMLElement, id: string) {
  chunkWatch = null;
  const [d, fe] = await Promise.all([
    gql(
      `query($j: String!) {
      job(id: $j) { id description inputs output paused maxAttempts leaseSeconds retryDelaySeconds maxConcurrent pool }
      claims(job: $j) { token job dataid attempt executor fence leaseExpiresAt }
      failed: chunks(job: $j, role: OUTPUT, status: FAILED, first: 200) { edges { node { dataid attempt reason updatedAt retryAt } } }
      held: chunks(job: $j, role: OUTPUT, status: HOLD, first: 200) { edges { node { dataid attempt reason updatedAt } } }
    }`,
      { j: id },
    ),
    failureEvents(id),
  ]);
  const j = d.job;
  const fails = [
    ...d.failed.edges.map((e: any) => ({ ...e.node, status: "FAILED" })),
    ...d.held.edges.map((e: any) => ({ ...e.node, status: "HOLD" })),
  ].sort((a, b) => shortlex(a.dataid, b.dataid));
  view.innerHTML = `<section class="job"><p><a href="#/">&larr; pipeline</a></p>
    <h2>${esc(j.id)} ${j.paused ? `<span class="status s-HOLD">paused</span>` : ""}</h2>
    <p class="muted">${esc(j.description)}</p>
    <p>reads ${j.inputs.map((i: string) => `<b>${esc(i)}</b>`).join(", ") || "nothing (scheduled)"} · writes <b>${esc(j.output)}</b> ·
      ${j.maxAttempts} attempts · lease ${j.leaseSeconds}s${j.maxConcurrent ? ` · at most ${j.maxConcurrent} live` : ""}${j.pool ? ` · pool ${esc(j.pool)}` : ""}</p>
    <h3>Live claims</h3>${
      d.claims.length
        ? `<table><tr><th>dataid</th><th>executor</th><th>attempt</th><th>lease</th></tr>${d.claims
            .map((c: Claim) => `<tr><td><a href="${chunkHref(j.output, c.dataid)}">${esc(c.dataid)}</a></td><td>${esc(c.executor)}</td><td>${c.attempt}</td><td data-until="${esc(c.leaseExpiresAt)}">${countdown(c.leaseExpiresAt)}</td></tr>`)
            .join("")}</table>`
        : `<p class="muted">None.</p>`
    }
    <h3>Recent failures <span class="muted note">from the event log, newest first${fe.truncated ? `; only the first ${failureScanPages * 1000} events of the job were read` : ""}</span></h3>${
      fe.events.length
        ? `<table id="failures"><tr><th>time</th><th>dataid</th><th>transition</th><th>attempt</th><th>executor</th><th>by</th><th>reason</th></tr>${fe.events
            .map(
              (e) => `<tr><td title="${esc(e.time)}">${esc(e.time.replace("T", " ").slice(0, 19))}</td><td><a href="${chunkHref(j.output, e.dataid)}">${esc(e.dataid)}</a></td>
              <td>${esc(e.from)} &rarr; <span class="status s-${esc(e.to)}">${esc(e.to)}</span></td><td>${e.attempt}/${j.maxAttempts}</td><td>${esc(e.executor)}</td><td>${esc(e.actor)}</td><td class="reason">${esc(e.reason)}</td></tr>`,
            )
            .join("")}</table>`
        : `<p class="muted">No failure recorded.</p>`
    }
    <h3>Failed or held now</h3>${
      fails.length
        ? `<table id="failing"><tr><th>dataid</th><th>status</th><th>attempt</th><th>reason</th><th>when</th><th>retry at</th></tr>${fails
            .map((f) => `<tr><td><a href="${chunkHref(j.output, f.dataid)}">${esc(f.dataid)}</a></td><td><span class="status s-${f.status}">${f.status}</span></td><td>${f.attempt}/${j.maxAttempts}</td><td class="reason">${esc(f.reason)}</td><td title="${esc(f.updatedAt)}">${ago(f.updatedAt)}</td><td>${esc(f.retryAt || "")}</td></tr>`)
            .join("")}</table>`
        : `<p class="muted">No failed or held chunks.</p>`
    }</section>`;
  // (A refresh that fires after the page was left does nothing.)
  const watch = { id, refresh: debounce(() => jobWatch === watch && jobPage(view, id).catch((e) => toast(e.message, true)), 300) };
  jobWatch = watch;
}

start();
