// Shared pieces of markup (lit-html templates escape what they insert) and
// the page's toast and confirmation dialog.
import { html, render, type TemplateResult } from "lit-html";
import { ApiError } from "./api";
import { chunkHref, jobHref, state } from "./state";
import { statusName } from "./util";

export const statusChip = (s: string, id?: string) =>
  html`<span class="status s-${s}" id=${id ?? ""}>${statusName(s)}</span>`;

export const dot = (s: string, late = false) => html`<i class="dot s-${s} ${late ? "late" : ""}"></i>`;

let toastTimer: ReturnType<typeof setTimeout> | undefined;
export function toast(msg: string, error = false) {
  const t = document.getElementById("toast");
  if (!t) return;
  t.textContent = msg;
  t.className = error ? "error" : "";
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (t.hidden = true), 6000);
}

/** confirmDialog asks before an action; it resolves to the form, or null. */
export function confirmDialog(title: string, body: TemplateResult | string, extra: TemplateResult | string = "", ok = "Confirm"): Promise<HTMLFormElement | null> {
  return new Promise((resolve) => {
    const host = document.createElement("div");
    document.body.append(host);
    const done = (f: HTMLFormElement | null) => {
      host.remove();
      resolve(f);
    };
    render(
      html`<div class="modal" role="dialog" aria-modal="true">
        <form class="box" id="confirm" @submit=${(ev: Event) => (ev.preventDefault(), done(ev.target as HTMLFormElement))}
          @keydown=${(ev: KeyboardEvent) => ev.key === "Escape" && done(null)}>
          <h3>${title}</h3>
          <p>${body}</p>
          ${extra}
          <div class="buttons">
            <button type="button" id="cancel" @click=${() => done(null)}>Cancel</button>
            <button type="submit" id="confirm-ok" class="danger">${ok}</button>
          </div>
        </form>
      </div>`,
      host,
    );
    (host.querySelector("#confirm-ok") as HTMLElement).focus();
  });
}

/** act runs an action and says how it went. */
export async function act(label: string, run: () => Promise<string>) {
  try {
    toast(`${label}: ${await run()}`);
  } catch (e) {
    toast(`${label} refused: ${(e as ApiError).code || ""} ${(e as Error).message}`, true);
  }
}

export const errorText = (e: unknown) => html`<p class="error">${(e as Error).message}</p>`;

/** pausedChip marks a paused job wherever it is named. */
export const pausedChip = (id: string) =>
  state.jobById.get(id)?.paused ? html` <span class="status paused" title="paused: it claims nothing until resumed">paused</span>` : "";

/** jobLink links a job's page, marked when the job is paused. */
export const jobLink = (id: string) => html`<a href=${jobHref(id)}>${id}</a>${pausedChip(id)}`;

/**
 * refusal spells out why the server refused an action: its code and
 * message, and for LOCKED what holds it (the blockers, each a chunk).
 */
export function refusal(what: string, e: unknown) {
  const err = e as ApiError;
  const blockers: any[] = (err.extensions && err.extensions.blockers) || [];
  const why =
    err.code === "FORBIDDEN"
      ? "this token may not do it (admins only)"
      : err.code === "LOCKED"
        ? blockers.length
          ? "it is in use: what holds it is listed below"
          : "it is in use"
        : err.code === "NOT_FOUND"
          ? "it does not exist (any more)"
          : "";
  return html`<div class="refusal" role="alert" data-code=${err.code || ""}>
    <b>${what} refused</b>${err.code ? html` <span class="code">${err.code}</span>` : ""}${why ? `: ${why}` : ""}
    <p class="reason">${err.message}</p>
    ${blockers.length
      ? html`<table class="blockers"><tr><th>chunk</th><th>job</th><th>kind</th><th>status</th></tr>
          ${blockers.map(
            (b) => html`<tr><td><a href=${chunkHref(b.dataset, b.dataid)}>${b.dataset} ${b.dataid}</a></td><td>${b.job ? jobLink(b.job) : ""}</td><td>${b.kind}</td><td>${b.status ? statusChip(b.status) : ""}</td></tr>`,
          )}</table>`
      : ""}
  </div>`;
}
