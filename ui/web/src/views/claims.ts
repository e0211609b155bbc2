// Live claims: executor, attempt and a lease that counts down; admins may
// release one.
import { html, render } from "lit-html";
import { chunkHref, isAdmin, outputOf, refreshClaims, state, type Claim } from "../state";
import { countdown } from "../util";
import { jobLink, toast } from "../ui";
import { releaseClaim } from "./actions";

export function claimsTable(claims: Claim[], withJob = true) {
  if (!claims.length) return html`<p class="muted">No live claims.</p>`;
  return html`<table class="claims"><thead><tr>${withJob ? html`<th>job</th>` : ""}<th>dataid</th><th>executor</th><th>attempt</th><th>lease</th>${isAdmin() ? html`<th></th>` : ""}</tr></thead>
    <tbody>${claims.map(
      (c) => html`<tr>${withJob ? html`<td>${jobLink(c.job)}</td>` : ""}
        <td><a href=${chunkHref(outputOf(c.job), c.dataid)}>${c.dataid}</a></td><td>${c.executor}</td><td>${c.attempt}</td>
        <td class="lease" data-until=${c.leaseExpiresAt} .textContent=${countdown(c.leaseExpiresAt)}></td>
        ${isAdmin() ? html`<td>${c.token ? html`<button data-action="release" @click=${() => releaseClaim(c, rereadClaims)}>Release</button>` : ""}</td>` : ""}</tr>`,
    )}</tbody></table>`;
}

export function renderClaims() {
  const el = document.getElementById("claims");
  if (el) render(claimsTable(state.claims), el);
}

let timer: ReturnType<typeof setTimeout> | undefined;
/** rereadClaims reads the live claims again, soon (events come in bursts), or after wait ms. */
export function rereadClaims(after?: () => void, wait = 200) {
  clearTimeout(timer);
  timer = setTimeout(async () => {
    try {
      await refreshClaims();
      renderClaims();
      after?.();
    } catch (e) {
      toast((e as Error).message, true);
    }
  }, wait);
}

// tick counts the leases down; a claim whose lease reaches zero is read
// again once (a heartbeat may have extended it, which makes no event).
// It sets the text of [data-until] elements: their templates bind it as a
// property (.textContent), never as a child part, whose marker the tick
// would remove (the next render of the page then threw, and a page
// re-rendered after an action, such as the job page after a pause, was
// left half drawn).
const reread = new Set<string>();
export function tick(after: () => void) {
  let stale = false;
  document.querySelectorAll<HTMLElement>("[data-until]").forEach((td) => {
    const until = td.dataset.until!;
    td.textContent = countdown(until);
    if (Date.parse(until) <= Date.now() && !reread.has(until)) {
      reread.add(until);
      stale = true;
    }
  });
  if (stale) rereadClaims(after);
}
