// The catalog's history (catalogChanges): who declared, changed, paused or
// deleted which dataset, job, pool or credential, when, and what it was
// before; newest first, a page at a time (the server pages it: the page
// never reads the whole history), filtered by dataset, job and actor. A
// page of its own (#/history) and a section of the job and dataset pages.
import { html, nothing, render } from "lit-html";
import { gql } from "../api";
import { datasetHref, jobHref, state } from "../state";
import { ago, shortTime } from "../util";
import { refusal } from "../ui";

export interface ChangeFilter {
  dataset?: string;
  job?: string;
  actor?: string;
}

interface Change {
  cursor: string;
  time: string;
  actor: string;
  kind: string;
  id: string;
  op: string;
  dataset: string | null;
  job: string | null;
  before: string | null;
}

const query = `query($d: String, $j: String, $a: String, $first: Int, $after: String) {
  catalogChanges(dataset: $d, job: $j, actor: $a, first: $first, after: $after) {
    edges { node { cursor time actor kind id op dataset job before } }
    pageInfo { hasNextPage endCursor } } }`;

/** what each operation did, in words */
const verbs: Record<string, [string, string]> = {
  // [when it created the object, when it changed one]
  upsertDataset: ["declared", "changed"],
  upsertJob: ["declared", "changed"],
  upsertPool: ["declared", "changed"],
  setCredential: ["set", "set again"],
  pauseJob: ["paused", "paused"],
  resumeJob: ["resumed", "resumed"],
  deleteJob: ["deleted", "deleted"],
  deleteDataset: ["deleted", "deleted"],
  deletePool: ["deleted", "deleted"],
  addPartitions: ["values added", "values added"],
  removePartitions: ["values removed", "values removed"],
};

/** the number of the last request of each history on show */
const asked = new WeakMap<HTMLElement, number>();

/**
 * historySection shows the changes matching f in host, pageSize at a
 * time, with buttons to the older and newer pages. It keeps the page it
 * is on when called again for the same filter (a live page re-rendering);
 * force reads the newest page again.
 */
export function historySection(host: HTMLElement, f: ChangeFilter, pageSize: number, force = false): Promise<void> {
  const key = JSON.stringify([f, pageSize]);
  if (host.dataset.key === key && !force) return Promise.resolve();
  host.dataset.key = key;
  // The cursors of the pages before this one: "newer" goes back one.
  const back: (string | null)[] = [];
  const show = async (after: string | null) => {
    // Only the answer to the last request is drawn: an earlier one still
    // on its way (sent before a change this page just made) is dropped.
    const seq = (asked.get(host) || 0) + 1;
    asked.set(host, seq);
    let d: any;
    try {
      d = await gql(query, { d: f.dataset || null, j: f.job || null, a: f.actor || null, first: pageSize, after });
    } catch (e) {
      if (asked.get(host) === seq) render(refusal("Reading the history", e), host);
      return;
    }
    if (asked.get(host) !== seq) return;
    const c = d.catalogChanges;
    const changes: Change[] = c.edges.map((e: any) => e.node);
    const first = back.length * pageSize + 1;
    const older = () => (back.push(after), show(c.pageInfo.endCursor));
    const newer = () => show(back.pop() ?? null);
    const newest = () => ((back.length = 0), show(null));
    render(
      changes.length
        ? html`<table class="history" data-page=${back.length + 1} data-rows=${changes.length}>
              <tr><th>when</th><th>by</th><th>change</th><th>before</th></tr>
              ${changes.map((c, i) => row(c, afterOf(changes, i)))}
            </table>
            <div class="tools pager">
              ${back.length ? html`<button type="button" class="history-newest" @click=${newest}>newest</button>
                    <button type="button" class="history-newer" @click=${newer}>◀ newer</button>` : nothing}
              <span class="muted small">changes ${first.toLocaleString("en")}–${(first + changes.length - 1).toLocaleString("en")}, newest first</span>
              ${c.pageInfo.hasNextPage ? html`<button type="button" class="history-older" @click=${older}>older ▶</button>` : nothing}
            </div>`
        : html`<p class="muted history-empty">${back.length ? "No older change." : `No catalog change${describe(f)} recorded.`}</p>`,
      host,
    );
  };
  render(html`<p class="loading">Loading the history…</p>`, host);
  return show(null);
}

const describe = (f: ChangeFilter) =>
  [f.dataset && ` of dataset ${f.dataset}`, f.job && ` of job ${f.job}`, f.actor && ` by ${f.actor}`].filter(Boolean).join("");

/**
 * afterOf is the value a change left, where the page knows it: the value
 * before the next newer change of the same object on the page.
 */
function afterOf(changes: Change[], i: number): any {
  const c = changes[i];
  for (let k = i - 1; k >= 0; k--) {
    const n = changes[k];
    if (n.kind === c.kind && n.id === c.id && !valuesOps.has(n.op)) return parse(n.before);
  }
  return undefined;
}

/** the operations whose record holds the change (the values added or removed), not the value before */
const valuesOps = new Set(["addPartitions", "removePartitions"]);

/** valuesChanged spells such a record: "added 3 values of customer (a, b, c)". */
function valuesChanged(v: any): string {
  const vals: string[] = (v.removed?.length ? v.removed : v.added) || [];
  const verb = v.removed?.length ? "removed" : "added";
  const n = v.count ?? vals.length;
  return `${verb} ${n} ${n === 1 ? "value" : "values"}${v.dimension ? " of " + v.dimension : ""}${vals.length ? ` (${vals.join(", ")}${n > vals.length ? ", …" : ""})` : ""}`;
}

function parse(s: string | null): any {
  if (s == null) return null;
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

function row(c: Change, after: any) {
  const [made, changed] = verbs[c.op] || [c.op, c.op];
  const verb = c.before ? changed : made;
  return html`<tr data-op=${c.op} data-actor=${c.actor} data-id=${c.id}>
    <td title=${c.time} class="nowrap">${shortTime(c.time)}<br><span class="muted small">${ago(c.time)}</span></td>
    <td class="actor">${c.actor}</td>
    <td>${c.kind} ${object(c)} <b>${verb}</b> <span class="op">${c.op}</span></td>
    <td class="before">${before(c, after)}</td></tr>`;
}

/** object links the changed object while it exists. */
function object(c: Change) {
  const job = (id: string) => (state.jobById.has(id) ? html`<a href=${jobHref(id)}>${id}</a>` : id);
  const dataset = (id: string) => (state.byId.has(id) ? html`<a href=${datasetHref(id)}>${id}</a>` : id);
  if (c.kind === "job") return job(c.id);
  if (c.kind === "dataset") return dataset(c.id);
  if (c.kind === "credential" && c.job && c.dataset) return html`${job(c.job)} / ${dataset(c.dataset)}`;
  return html`<b>${c.id}</b>`;
}

const show = (x: unknown) => (typeof x === "object" && x !== null ? JSON.stringify(x) : String(x));
/** empty: nothing set (null, "", [] or an object of empty fields); two empties are no change. */
const empty = (x: any): boolean => x == null || x === "" || (Array.isArray(x) ? !x.length : typeof x === "object" && Object.values(x).every(empty));
const same = (a: any, b: any) => (empty(a) && empty(b)) || show(a) === show(b);
const isObject = (v: any) => v && typeof v === "object" && !Array.isArray(v);

/**
 * before shows the value before the change: the fields the change set
 * when the page knows them (a pause sets paused; an update, what differs
 * from the value it left), else the whole value in a line; the whole
 * value on demand.
 */
function before(c: Change, after: any) {
  if (c.before == null) return html`<span class="muted">(none: created)</span>`;
  const v = parse(c.before);
  if (v === undefined) return html`<code>${c.before}</code>`;
  if (valuesOps.has(c.op) && isObject(v)) return html`<span class="values-change">${valuesChanged(v)}</span>`;
  let fields: string[] = [];
  if (isObject(v)) {
    if ((c.op === "pauseJob" || c.op === "resumeJob") && "paused" in v) fields = ["paused"];
    else if (isObject(after)) fields = Object.keys({ ...v, ...after }).filter((k) => !/^(updatedAt|createdAt|version)$/.test(k) && !same(v[k], after[k]));
  }
  const line = fields.length
    ? fields.map((k) => `${k}: ${empty(v[k]) && typeof v[k] === "object" ? "(none)" : show(v[k] ?? null)}`).join(", ")
    : isObject(v)
      ? Object.entries(v)
          .filter(([k, x]) => !empty(x) && !/^(updatedAt|createdAt|version)$/.test(k))
          .map(([k, x]) => `${k}: ${show(x)}`)
          .join(", ")
      : JSON.stringify(v);
  return html`<details><summary class=${fields.length ? "changed" : ""} title=${fields.length ? "the fields this change set, as they were before it" : ""}
      >${line.length > 320 ? line.slice(0, 319) + "…" : line}</summary><pre>${JSON.stringify(v, null, 2)}</pre></details>`;
}

/** historyPage is #/history: every change, filtered by the query's dataset, job and actor. */
export async function historyPage(view: HTMLElement, q: URLSearchParams) {
  const f: ChangeFilter = { dataset: q.get("dataset") || "", job: q.get("job") || "", actor: q.get("actor") || "" };
  const submit = (ev: Event) => {
    ev.preventDefault();
    const d = new FormData(ev.target as HTMLFormElement);
    const p = new URLSearchParams();
    for (const k of ["dataset", "job", "actor"]) {
      const v = String(d.get(k) || "").trim();
      if (v) p.set(k, v);
    }
    const s = p.toString();
    location.hash = "#/history" + (s ? "?" + s : "");
  };
  render(
    html`<section class="history-page"><p class="crumbs"><a href="#/">pipeline</a> › history</p>
      <h2>Catalog history <span class="note muted">every change of a dataset, job, pool or credential, with who made it and the value before; newest first</span></h2>
      <form id="history-filter" class="tools" @submit=${submit}>
        <label>dataset <input name="dataset" list="history-datasets" .value=${f.dataset} size="18"></label>
        <label>job <input name="job" list="history-jobs" .value=${f.job} size="18"></label>
        <label>by <input name="actor" .value=${f.actor} size="14" placeholder="token name"></label>
        <button type="submit">Filter</button>
        ${f.dataset || f.job || f.actor ? html`<a href="#/history">show every change</a>` : nothing}
        <datalist id="history-datasets">${state.datasets.map((d) => html`<option value=${d.id}></option>`)}</datalist>
        <datalist id="history-jobs">${state.jobs.map((j) => html`<option value=${j.id}></option>`)}</datalist>
      </form>
      <div id="history-host" class="panel"></div></section>`,
    view,
  );
  await historySection(document.getElementById("history-host")!, f, 100, true);
}
