// A job's page: what it reads and writes, its live claims, its recent
// failures from the event log (each transition of its chunks to FAILED or
// HOLD, newest first, with the reason) and its chunks failed or held now;
// live; its catalog history; and for admins pause, resume and delete.
import { html, nothing, render, type TemplateResult } from "lit-html";
import { ApiError, gql } from "../api";
import { chunkHref, claimFields, datasetHref, isAdmin, loadCatalog, state, type Claim } from "../state";
import { mappingLabel } from "../mapping";
import { ago, shortlex, shortTime } from "../util";
import { confirmDialog, refusal, statusChip, toast } from "../ui";
import { claimsTable } from "./claims";
import { historySection } from "./history";

interface Event {
  time: string;
  actor: string;
  dataid: string;
  role: string;
  from: string;
  to: string;
  attempt: number;
  executor: string;
  reason: string;
}

export const jobWatch = { current: null as null | { id: string; refresh: () => void } };

// The event log is read oldest first: the page reads up to failureScanPages
// pages of 1000 of the job's events and keeps the last failureKeep failures.
const failureScanPages = 50;
const failureKeep = 100;

async function failureEvents(job: string): Promise<{ events: Event[]; truncated: boolean }> {
  const keep: Event[] = [];
  let after: string | null = null;
  for (let page = 0; page < failureScanPages; page++) {
    const d: any = await gql(
      `query($j: String!, $after: String) { events(job: $j, first: 1000, after: $after) {
        edges { node { time actor dataid role from to attempt executor reason } } pageInfo { hasNextPage endCursor } } }`,
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

/** the RESUBMIT chunks a job's page lists, and of them those whose blockers it asks */
const resubmitKeep = 50;
const resubmitAsked = 10;

/**
 * resubmitBlockers asks, in one request, what holds up the first
 * resubmitted chunks (an input on HOLD, a live claim downstream): one
 * list per chunk, undefined past the first resubmitAsked or when the
 * server refuses.
 */
async function resubmitBlockers(job: string, again: { dataid: string }[]): Promise<(any[] | undefined)[]> {
  const asked = again.slice(0, resubmitAsked);
  if (!asked.length) return [];
  try {
    const d: any = await gql(
      `query($j: String!) { ${asked.map((r, i) => `b${i}: blockers(job: $j, dataid: ${JSON.stringify(r.dataid)}) { dataset dataid kind status }`).join("\n")} }`,
      { j: job },
    );
    return again.map((_, i) => (i < asked.length ? d["b" + i] : undefined));
  } catch {
    return again.map(() => undefined);
  }
}

/** the number of the last read of a job's page: only its answer is drawn */
let reads = 0;

export async function jobPage(view: HTMLElement, id: string) {
  const seq = ++reads;
  let d: any, fe: { events: Event[]; truncated: boolean };
  try {
    [d, fe] = await Promise.all([
      gql(
        `query($j: String!) {
          job(id: $j) { id description inputs output paused maxAttempts leaseSeconds retryDelaySeconds maxConcurrent pool inputMappings { dataset kind startOffset endOffset } }
          claims(job: $j) { ${claimFields} }
          failed: chunks(job: $j, role: OUTPUT, status: FAILED, first: 200) { edges { node { dataid attempt reason updatedAt retryAt } } }
          held: chunks(job: $j, role: OUTPUT, status: HOLD, first: 200) { edges { node { dataid attempt reason updatedAt } } }
          again: chunks(job: $j, role: OUTPUT, status: RESUBMIT, first: ${resubmitKeep + 1}) { edges { node { dataid reason updatedAt } } }
        }`,
        { j: id },
      ),
      failureEvents(id),
    ]);
  } catch (e) {
    if (seq !== reads) return; // a later read (after an action, or a refresh) draws the page
    if (e instanceof ApiError && e.code === "NOT_FOUND") return gone(view, id, "There is no job " + id + ": it was deleted, or never declared.");
    throw e;
  }
  if (seq !== reads) return;
  const again = d.again.edges.map((e: any) => e.node).slice(0, resubmitKeep);
  const againBlockers = await resubmitBlockers(id, again);
  if (seq !== reads) return;
  const j = d.job;
  const fails = [...d.failed.edges.map((e: any) => ({ ...e.node, status: "FAILED" })), ...d.held.edges.map((e: any) => ({ ...e.node, status: "HOLD" }))].sort((a, b) => shortlex(a.dataid, b.dataid));
  const input = (i: string) => {
    const m = mappingLabel(j, i);
    return html`<a href=${datasetHref(i)}><b>${i}</b></a>${m ? html` <span class="mapping">${m}</span>` : ""}`;
  };
  render(
    html`<section class="job"><p class="crumbs"><a href="#/">pipeline</a></p>
      <h2>${j.id} ${j.paused ? html`<span class="status paused" id="job-paused">paused</span>` : nothing}</h2>
      ${j.paused ? html`<p class="paused-note" id="job-paused-note">Paused: it claims nothing until it is resumed; its live claims run to their end.</p>` : nothing}
      <p class="muted">${j.description}</p>
      ${isAdmin()
        ? html`<div class="actions" id="job-actions">
            ${j.paused
              ? html`<button type="button" data-action="resume" @click=${() => pauseOrResume(view, id, false)}>Resume</button>`
              : html`<button type="button" data-action="pause" @click=${() => pauseOrResume(view, id, true)}>Pause</button>`}
            <button type="button" class="danger" data-action="delete-job" @click=${() => deleteJob(view, j)}>Delete job…</button>
          </div>
          <div id="job-refusal"></div>`
        : nothing}
      <p>reads ${j.inputs.length ? j.inputs.map((i: string, k: number) => html`${k ? ", " : ""}${input(i)}`) : "nothing (scheduled)"} · writes <a href=${datasetHref(j.output)}><b>${j.output}</b></a> ·
        ${j.maxAttempts} attempts · lease ${j.leaseSeconds}s${j.maxConcurrent ? ` · at most ${j.maxConcurrent} live` : ""}${j.pool ? ` · pool ${j.pool}` : ""}</p>
      <h3>Live claims</h3>${claimsTable(d.claims as Claim[], false)}
      <h3>Recent failures <span class="muted note">from the event log, newest first${fe.truncated ? `; only the first ${failureScanPages * 1000} events of the job were read` : ""}</span></h3>
      ${fe.events.length
        ? html`<table id="failures"><tr><th>time</th><th>dataid</th><th>transition</th><th>attempt</th><th>executor</th><th>by</th><th>reason</th></tr>
            ${fe.events.map(
              (e) => html`<tr><td title=${e.time}>${shortTime(e.time)}</td><td><a href=${chunkHref(j.output, e.dataid)}>${e.dataid}</a></td>
                <td>${e.from} → ${statusChip(e.to)}</td><td>${e.attempt}/${j.maxAttempts}</td><td>${e.executor}</td><td>${e.actor}</td><td class="reason">${e.reason}</td></tr>`,
            )}</table>`
        : html`<p class="muted">No failure recorded.</p>`}
      <h3>Failed or held now</h3>
      ${fails.length
        ? html`<table id="failing"><tr><th>dataid</th><th>status</th><th>attempt</th><th>reason</th><th>when</th><th>retry at</th></tr>
            ${fails.map(
              (f) => html`<tr><td><a href=${chunkHref(j.output, f.dataid)}>${f.dataid}</a></td><td>${statusChip(f.status)}</td><td>${f.attempt}/${j.maxAttempts}</td>
                <td class="reason">${f.reason}</td><td title=${f.updatedAt}>${ago(f.updatedAt)}</td><td>${f.retryAt || ""}</td></tr>`,
            )}</table>`
        : html`<p class="muted">No failed or held chunks.</p>`}
      ${again.length
        ? html`<h3>Resubmitted, to be produced again <span class="muted note">lowest first${d.again.edges.length > resubmitKeep ? `; the first ${resubmitKeep}` : ""}</span></h3>
            <table id="resubmitted"><tr><th>dataid</th><th>since</th><th>reason</th><th>blocked by</th></tr>
            ${again.map(
              (r: any, i: number) => html`<tr><td><a href=${chunkHref(j.output, r.dataid)}>${r.dataid}</a></td><td title=${r.updatedAt}>${ago(r.updatedAt)}</td><td class="reason">${r.reason}</td>
                <td>${againBlockers[i] === undefined
                  ? html`<span class="muted">(not looked up)</span>`
                  : againBlockers[i].length
                    ? againBlockers[i].map((b: any) => html`<div>${b.kind} <a href=${chunkHref(b.dataset, b.dataid)}>${b.dataset} ${b.dataid}</a> ${b.status}</div>`)
                    : html`<span class="muted">nothing: claimable now</span>`}</td></tr>`,
            )}</table>`
        : nothing}
      <h3>History <span class="muted note">changes of the job and its credentials, newest first · <a href="#/history?job=${encodeURIComponent(id)}">all of it</a></span></h3>
      <div id="job-history"></div></section>`,
    view,
  );
  const st = state.jobById.get(id);
  if (st && st.paused !== j.paused) st.paused = j.paused; // the catalog the other views draw
  historySection(document.getElementById("job-history")!, { job: id }, 20);
  // (A refresh that fires after the page was left does nothing.)
  let t: ReturnType<typeof setTimeout> | undefined;
  const w = {
    id,
    refresh: () => {
      clearTimeout(t);
      t = setTimeout(() => jobWatch.current === w && jobPage(view, id).catch((e) => toast(e.message, true)), 300);
    },
  };
  jobWatch.current = w;
}

/** gone says the job is not (any more), with its history and a way back. */
function gone(view: HTMLElement, id: string, msg: TemplateResult | string) {
  jobWatch.current = null;
  render(
    html`<section class="job gone" id="job-gone"><p class="crumbs"><a href="#/">pipeline</a></p>
      <h2>${id} <span class="status s-NONE">not in the catalog</span></h2>
      <p>${msg}</p>
      <p><a href="#/" id="back">Back to the pipeline</a></p>
      <h3>History <span class="muted note">of the job id, newest first</span></h3>
      <div id="job-history"></div></section>`,
    view,
  );
  return historySection(document.getElementById("job-history")!, { job: id }, 20, true);
}

async function pauseOrResume(view: HTMLElement, id: string, pause: boolean) {
  const what = pause ? "Pause" : "Resume";
  const ok = await confirmDialog(
    `${what} job ${id}`,
    pause
      ? html`Pause <b>${id}</b>? From now on no runner is granted a claim of it; its live claims run to their end. <code>chunklock apply</code> leaves it paused unless the pipeline file sets <code>paused</code>.`
      : html`Resume <b>${id}</b>? Its runners claim again.`,
    "",
    what,
  );
  if (!ok) return;
  const box = document.getElementById("job-refusal");
  try {
    const d = await gql(`mutation($j: String!) { r: ${pause ? "pauseJob" : "resumeJob"}(id: $j) { id paused } }`, { j: id });
    const st = state.jobById.get(id);
    if (st) st.paused = d.r.paused;
    if (box) render(nothing, box);
    toast(`${id} ${d.r.paused ? "paused" : "resumed"}`);
  } catch (e) {
    if (box) render(refusal(what, e), box);
    return;
  }
  await jobPage(view, id);
  const h = document.getElementById("job-history");
  if (h) await historySection(h, { job: id }, 20, true);
}

async function deleteJob(view: HTMLElement, j: any) {
  const ok = await confirmDialog(
    `Delete job ${j.id}`,
    html`Delete <b>${j.id}</b> with its key, credentials, queue and reads? The chunks it produced stay in <b>${j.output}</b>, READY and readable;
      a job declared later for ${j.output} takes them over. It is refused while the job has live claims: pause it first and let them end.`,
    "",
    "Delete",
  );
  if (!ok) return;
  const box = document.getElementById("job-refusal");
  try {
    await gql(`mutation($j: String!) { deleteJob(id: $j) }`, { j: j.id });
  } catch (e) {
    if (box) render(refusal("Delete", e), box);
    else toast(`Delete refused: ${(e as Error).message}`, true);
    return;
  }
  toast(`${j.id} deleted`);
  try {
    await loadCatalog(); // the other views stop drawing it
  } catch {
    /* the page below says what happened; the next view reads the catalog again */
  }
  const out = state.byId.has(j.output) ? html`<a href=${datasetHref(j.output)}>${j.output}</a>` : j.output;
  await gone(view, j.id, html`Job <b>${j.id}</b> is deleted. The chunks it produced stay in ${out}.`);
}
