// A job's page: what it reads and writes, its live claims, its recent
// failures from the event log (each transition of its chunks to FAILED or
// HOLD, newest first, with the reason) and its chunks failed or held now;
// live.
import { html, render } from "lit-html";
import { gql } from "../api";
import { chunkHref, claimFields, datasetHref, type Claim } from "../state";
import { mappingLabel } from "../mapping";
import { ago, shortlex, shortTime } from "../util";
import { statusChip, toast } from "../ui";
import { claimsTable } from "./claims";

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

export async function jobPage(view: HTMLElement, id: string) {
  const [d, fe] = await Promise.all([
    gql(
      `query($j: String!) {
        job(id: $j) { id description inputs output paused maxAttempts leaseSeconds retryDelaySeconds maxConcurrent pool inputMappings { dataset kind startOffset endOffset } }
        claims(job: $j) { ${claimFields} }
        failed: chunks(job: $j, role: OUTPUT, status: FAILED, first: 200) { edges { node { dataid attempt reason updatedAt retryAt } } }
        held: chunks(job: $j, role: OUTPUT, status: HOLD, first: 200) { edges { node { dataid attempt reason updatedAt } } }
      }`,
      { j: id },
    ),
    failureEvents(id),
  ]);
  const j = d.job;
  const fails = [...d.failed.edges.map((e: any) => ({ ...e.node, status: "FAILED" })), ...d.held.edges.map((e: any) => ({ ...e.node, status: "HOLD" }))].sort((a, b) => shortlex(a.dataid, b.dataid));
  const input = (i: string) => {
    const m = mappingLabel(j, i);
    return html`<a href=${datasetHref(i)}><b>${i}</b></a>${m ? html` <span class="mapping">${m}</span>` : ""}`;
  };
  render(
    html`<section class="job"><p class="crumbs"><a href="#/">pipeline</a></p>
      <h2>${j.id} ${j.paused ? html`<span class="status s-HOLD">paused</span>` : ""}</h2>
      <p class="muted">${j.description}</p>
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
        : html`<p class="muted">No failed or held chunks.</p>`}</section>`,
    view,
  );
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
