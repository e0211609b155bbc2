// The dashboard's shell: sign-in, the header with the live indicator, the
// routes (#/ overview, #/dataset/ID, #/chunk/DATASET/DATAID, #/job/ID,
// #/history), and
// the events subscription that keeps every view live without polling.
import { html, render } from "lit-html";
import { ApiError, connect, dropConnection, setToken, subscribe, token, traffic, type LiveState } from "./api";
import { isTime } from "./calendar";
import { freshCatalog, loadCatalog, state } from "./state";
import { errorText } from "./ui";
import { watch as chunkWatch, chunkPage } from "./views/chunk";
import { rereadClaims, renderClaims, tick } from "./views/claims";
import { datasetPage, datasetWatch } from "./views/dataset";
import { cell, describe, grid, refresh, reload, renderGrid, rowFor } from "./views/grid";
import { historyPage } from "./views/history";
import { jobPage, jobWatch } from "./views/job";
import { OtherRow } from "./views/other";
import { overview } from "./views/overview";
import { renderPipeline } from "./views/pipeline";
import { TimeRow } from "./views/rows";

const app = document.getElementById("app")!;
app.textContent = ""; // the page's "Loading…": lit-html renders beside what it did not render

interface LiveEvent {
  cursor: string;
  job: string | null;
  dataset: string;
  dataid: string;
  role: string;
  from: string;
  to: string;
}

let started = false;
let unsubscribe: (() => void) | null = null;

export async function start() {
  try {
    await loadCatalog();
  } catch (e) {
    if (e instanceof ApiError && e.code === "UNAUTHENTICATED") return showLogin(token() ? "That token was refused." : "");
    return render(errorText(e), app);
  }
  render(shell(), app);
  connect(setLive);
  unsubscribe?.();
  unsubscribe = subscribe(`subscription($after: String) { events(after: $after) { cursor job dataset dataid role from to } }`, {}, (d) => onEvent(d.events as LiveEvent));
  if (!started) {
    started = true;
    window.addEventListener("hashchange", route);
    window.addEventListener("resize", () => grid.view && renderGrid());
    setInterval(() => tick(renderPipeline), 1000);
  }
  await route();
}

function shell() {
  return html`<header id="top"><a href="#/" class="brand">chunklock</a>
      <nav><a href="#/">Pipeline</a> <a href="#/history" id="nav-history">History</a> <a href="/">Playground</a></nav>
      <span id="live" class="live connecting" title="events subscription">connecting</span>
      <span class="who">${state.viewer.name} <span class="role" id="role">${state.viewer.role}</span>
        ${token() ? html`<button id="signout" class="link" @click=${() => (setToken(""), location.reload())}>Sign out</button>` : ""}</span></header>
    <main id="view"></main>
    <div id="toast" hidden></div>
    <div id="tip" hidden></div>`;
}

function showLogin(msg: string) {
  const submit = (ev: Event) => {
    ev.preventDefault();
    setToken((document.getElementById("token-input") as HTMLInputElement).value.trim());
    render(html`<p class="loading">Loading…</p>`, app);
    start();
  };
  render(
    html`<form id="token-form" class="login" @submit=${submit}>
      <h1>chunklock</h1>
      <p>This server needs a token. It stays in this browser (localStorage) until you sign out.</p>
      <p class="muted small">An admin makes one with <code>chunklock token new --name NAME --role reader &gt;&gt; tokens.yaml</code> (or <code>--role admin</code>), then restarts the server: the token is printed once, on stderr.</p>
      ${msg ? html`<p class="error">${msg}</p>` : ""}
      <input id="token-input" type="password" autocomplete="off" placeholder="token" size="60" required>
      <button type="submit">Sign in</button></form>`,
    app,
  );
}

let wasDown = false;

function setLive(s: LiveState, detail?: string) {
  if (s === "live" && wasDown) caughtUp();
  wasDown = s === "down";
  const el = document.getElementById("live");
  if (!el) return;
  el.className = "live " + s;
  el.textContent = s === "live" ? "live" : s === "refused" ? "refused" : "reconnecting";
  if (detail) el.title = detail;
}

async function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, query] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const view = document.getElementById("view")!;
  chunkWatch.chunk = null;
  jobWatch.current = null;
  datasetWatch.current = null;
  try {
    await freshCatalog();
    if (parts[0] === "chunk" && parts.length === 3) return await chunkPage(view, parts[1], parts[2]);
    if (parts[0] === "job" && parts.length === 2) return await jobPage(view, parts[1]);
    if (parts[0] === "dataset" && parts.length === 2) return await datasetPage(view, parts[1]);
    if (parts[0] === "history" && parts.length === 1) return await historyPage(view, new URLSearchParams(query || ""));
    await overview(view, new URLSearchParams(query || ""));
  } catch (e) {
    if (e instanceof ApiError && e.code === "UNAUTHENTICATED") return showLogin("The token was refused.");
    render(errorText(e), view);
  }
}

// ------------------------------------------------------------- live

/**
 * caughtUp reads the view on show again after the websocket came back:
 * the subscription resumes after the last event the page saw, but what
 * happened before the first one, or during the gap, is read afresh.
 */
function caughtUp() {
  refresh();
  rereadClaims(() => (renderClaims(), renderPipeline()));
  chunkWatch.chunk?.refresh();
  jobWatch.current?.refresh();
  datasetWatch.current?.refresh();
}

const rereadRows = new Set<TimeRow>();
let rowTimer: ReturnType<typeof setTimeout> | undefined;

/** onEvent brings every view on show up to date with one transition. */
function onEvent(ev: LiveEvent) {
  if (ev.role === "OUTPUT") {
    const r = rowFor(ev.dataset, ev.dataid);
    if (r instanceof TimeRow && grid.view) {
      // Draw what the event says at once; read the row again for what it
      // does not say (a column's counts, lateness).
      if (r.apply(ev.dataid, ev.to)) renderGrid();
      rereadRows.add(r);
      clearTimeout(rowTimer);
      rowTimer = setTimeout(() => {
        const rows = [...rereadRows];
        rereadRows.clear();
        reload(rows);
      }, 300);
    } else if (r instanceof OtherRow) {
      if (r.apply(ev.dataid, ev.to)) renderGrid();
      else OtherRow.load([r], () => renderGrid());
    }
    if (ev.from === "RUNNING" || ev.to === "RUNNING") rereadClaims(() => (renderClaims(), renderPipeline()));
    if (isTime(state.byId.get(ev.dataset)?.partitions?.kind) || r) renderPipeline();
  }
  const c = chunkWatch.chunk;
  if (c && ev.dataset === c.ds && ev.dataid === c.id) c.refresh();
  const j = jobWatch.current;
  if (j && ev.job === j.id && ev.role === "OUTPUT") j.refresh();
  const d = datasetWatch.current;
  if (d && ev.dataset === d.id && ev.role === "OUTPUT") d.refresh();
}

// For the tests and bench/uigrid: what the grid draws, read from the page.
(window as any).chunklock = {
  cell,
  describe: (ds: string, col: number) => {
    const r = grid.byId.get(ds);
    return r instanceof TimeRow ? describe(r, col) : null;
  },
  view: () => grid.view,
  traffic,
  dropConnection,
};
