// The operator's actions (admins only; the server refuses them to anyone
// else whatever the page does), each confirmed in a dialog first: on a
// chunk, on a range of a dataset, and releasing a live claim.
import { html, nothing, render } from "lit-html";
import { gql } from "../api";
import { act, confirmDialog, toast } from "../ui";
import { state, type Claim } from "../state";
import { shortlex } from "../util";
import { grid, renderGrid } from "./grid";

// ------------------------------------------------------------- a chunk

export async function chunkAction(action: string, ds: string, id: string, out: any, reload: () => Promise<void>) {
  const name = html`<b>${ds}</b> ${id}`;
  switch (action) {
    case "resubmit":
    case "resubmit-cascade": {
      const cascade = action === "resubmit-cascade";
      if (!(await confirmDialog(cascade ? "Resubmit with cascade" : "Resubmit", html`Produce ${name} again${cascade ? ", and invalidate every chunk computed from it downstream" : ""}?`))) return;
      return act("resubmit", async () => {
        const d = await gql(`mutation($d: String!, $i: String!, $c: Boolean) { resubmit(dataset: $d, dataid: $i, cascade: $c) { dataset dataid } }`, { d: ds, i: id, c: cascade });
        await reload();
        return `${d.resubmit.length} chunk(s) now RESUBMIT`;
      });
    }
    case "hold": {
      const f = await confirmDialog("Hold", html`Freeze ${name}? Nobody reads or writes it until it is resubmitted.`, html`<label>reason <input name="reason" size="40"></label>`);
      if (!f) return;
      const reason = String(new FormData(f).get("reason") || "");
      return act("hold", async () => {
        await gql(`mutation($d: String!, $i: String!, $r: String) { hold(dataset: $d, dataid: $i, reason: $r) { status } }`, { d: ds, i: id, r: reason });
        await reload();
        return "on HOLD";
      });
    }
    case "publish":
      if (!(await confirmDialog("Publish", html`Mark ${name} READY for its consumers?`))) return;
      return act("publish", async () => {
        await gql(`mutation($d: String!, $i: String!) { publish(dataset: $d, dataid: $i) { status } }`, { d: ds, i: id });
        await reload();
        return "READY";
      });
    case "release":
      if (!(await confirmDialog("Release claim", html`Give back the live claim on ${name} held by ${out.executor}?`))) return;
      return act("release", async () => {
        await gql(`mutation($t: String!) { release(token: $t) }`, { t: out.token });
        await reload();
        return "released";
      });
  }
}

export async function releaseClaim(c: Claim, after: () => void) {
  if (!(await confirmDialog("Release claim", html`Give back ${c.job} ${c.dataid} held by ${c.executor}? The executor's token goes stale; no attempt is counted.`))) return;
  await act("release", async () => {
    await gql(`mutation($t: String!) { release(token: $t) }`, { t: c.token });
    after();
    return "released";
  });
}

// ------------------------------------------------------------- a range

/**
 * selectRange takes a shift-click on a cell: the first marks one end, a
 * second on the same dataset the other, and fills the range form.
 */
export function selectRange(ds: string, id: string) {
  const a = grid.anchor;
  if (!a || a.ds !== ds) {
    grid.anchor = { ds, id };
    grid.selected = { ds, from: id, to: id };
    renderGrid();
    toast(`Shift-click another cell of ${ds} to select the range.`);
    return;
  }
  grid.anchor = null;
  const [from, to] = shortlex(a.id, id) <= 0 ? [a.id, id] : [id, a.id];
  grid.selected = { ds, from, to };
  renderGrid();
  const f = document.getElementById("range-op") as HTMLFormElement | null;
  if (!f) return;
  const sel = f.elements.namedItem("dataset") as HTMLSelectElement;
  sel.value = ds;
  sel.dispatchEvent(new Event("change")); // the operations offered follow the dataset
  (f.elements.namedItem("from") as HTMLInputElement).value = from;
  (f.elements.namedItem("to") as HTMLInputElement).value = to;
  f.scrollIntoView({ block: "nearest" });
  toast(`Selected ${ds} from ${from} to ${to}: choose the operation below.`);
}

/** rangeForm renders the range operations (admins) into host; dataset fixes the dataset. */
export function rangeForm(host: HTMLElement, dataset?: string) {
  const submit = async (ev: Event) => {
    ev.preventDefault();
    const f = new FormData(ev.target as HTMLFormElement);
    const op = String(f.get("op"));
    const ds = String(f.get("dataset"));
    const from = String(f.get("from")).trim();
    const to = String(f.get("to")).trim();
    const cascade = f.get("cascade") === "on";
    const reason = String(f.get("reason") || "");
    const what = op === "publishRange" ? "Publish" : op === "resubmitRange" ? `Resubmit${cascade ? " (with cascade)" : ""}` : "Hold";
    if (!(await confirmDialog(`${what} a range`, html`${what} every chunk of <b>${ds}</b> from ${from} to ${to}?`))) return;
    grid.selected = null;
    renderGrid();
    const args = op === "resubmitRange" ? ", cascade: $cascade" : op === "holdRange" ? ", reason: $reason" : "";
    const decl = op === "resubmitRange" ? ", $cascade: Boolean" : op === "holdRange" ? ", $reason: String" : "";
    await act(what, async () => {
      const d = await gql(
        `mutation($d: String!, $from: String!, $to: String!${decl}) { r: ${op}(dataset: $d, from: $from, to: $to${args}) { changed unchanged skipped { dataid code reason } } }`,
        { d: ds, from, to, cascade, reason },
      );
      const r = d.r;
      document.getElementById("range-result")!.textContent =
        `${r.changed} changed, ${r.unchanged} unchanged, ${r.skipped.length} skipped` + r.skipped.slice(0, 20).map((s: any) => `\n  ${s.dataid}: ${s.code} ${s.reason}`).join("");
      return `${r.changed} changed, ${r.skipped.length} skipped`;
    });
  };
  // The dataset comes first and decides the operations: publish for a
  // source, resubmit and hold for any; a produced dataset opens on
  // resubmit. On the overview no dataset is chosen until the user picks
  // one (or shift-clicks a range in the grid).
  let ds = dataset || "";
  let op = "";
  const labels: Record<string, string> = { publishRange: "publish", resubmitRange: "resubmit", holdRange: "hold" };
  const draw = () => {
    const def = ds ? state.byId.get(ds) : undefined;
    const ops = !ds ? [] : def && !def.producer ? ["publishRange", "resubmitRange", "holdRange"] : ["resubmitRange", "holdRange"];
    if (!ops.includes(op)) op = ops[0] || "";
    const start = def?.partitions?.start || def?.partitions?.dimensions?.[0]?.start || "";
    render(
      html`<section><h2>Range operations</h2>
        <form id="range-op" class="tools" @submit=${submit}>
          <select name="dataset" required @change=${(e: Event) => ((ds = (e.target as HTMLSelectElement).value), draw())}>
            ${dataset ? nothing : html`<option value="" disabled ?selected=${!ds}>dataset…</option>`}
            ${(dataset ? [dataset] : state.datasets.map((d) => d.id)).map((id) => html`<option ?selected=${id === ds}>${id}</option>`)}</select>
          <select name="op" ?disabled=${!ds} @change=${(e: Event) => ((op = (e.target as HTMLSelectElement).value), draw())}>
            ${ops.map((o) => html`<option value=${o} ?selected=${o === op}>${labels[o]}</option>`)}</select>
          <label>from <input name="from" size="14" required placeholder=${start ? "e.g. " + start : ""}></label>
          <label>to <input name="to" size="14" required></label>
          ${op === "resubmitRange" ? html`<label><input type="checkbox" name="cascade"> with cascade</label>` : nothing}
          ${op === "holdRange" ? html`<label>reason <input name="reason" size="20"></label>` : nothing}
          <button type="submit" data-action="range" ?disabled=${!ds}>Apply…</button>
        </form>
        <p class="muted small">${dataset ? "" : "Shift-click two cells of one row in the grid to fill in its dataset and range. "}Publish is offered for sources only; a resubmit with cascade also resubmits everything computed from the range.</p>
        <pre id="range-result" class="muted"></pre></section>`,
      host,
    );
    // Options re-rendered keep a choice the user made: set both selections.
    const f = host.querySelector("#range-op") as HTMLFormElement;
    (f.elements.namedItem("dataset") as HTMLSelectElement).value = ds;
    (f.elements.namedItem("op") as HTMLSelectElement).value = op;
  };
  draw();
}
