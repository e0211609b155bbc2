// Shared pieces of markup (lit-html templates escape what they insert) and
// the page's toast and confirmation dialog.
import { html, render, type TemplateResult } from "lit-html";
import { ApiError } from "./api";
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
export function confirmDialog(title: string, body: TemplateResult | string, extra: TemplateResult | string = ""): Promise<HTMLFormElement | null> {
  return new Promise((resolve) => {
    const host = document.createElement("div");
    document.body.append(host);
    const done = (f: HTMLFormElement | null) => {
      host.remove();
      resolve(f);
    };
    render(
      html`<div class="modal" role="dialog" aria-modal="true">
        <form class="box" id="confirm" @submit=${(ev: Event) => (ev.preventDefault(), done(ev.target as HTMLFormElement))}>
          <h3>${title}</h3>
          <p>${body}</p>
          ${extra}
          <div class="buttons">
            <button type="button" id="cancel" @click=${() => done(null)}>Cancel</button>
            <button type="submit" id="confirm-ok" class="danger">Confirm</button>
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
