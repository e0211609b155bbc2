// Rows of the grid on axes of their own: INTEGER and STATIC datasets, and
// datasets without a definition (their chunks). Each is a bar of runs in
// dataid order, a run as wide as its share of the dataids (at least a
// sliver, so that one failed chunk in thousands shows).
import { html, nothing } from "lit-html";
import { gql } from "../api";
import { chunkHref, datasetHref, kindLabel, type Dataset } from "../state";
import { plural, statusName } from "../util";
import type { Run } from "./rows";

/** the first dataids of a row the overview reads (its dataset's page reads them all) */
const limit = 2000;

export class OtherRow {
  runs: Run[] = [];
  total = 0;
  more = false;
  loaded = false;
  loading = false;
  error = "";

  constructor(public ds: Dataset) {}

  /** load reads the first dataids of each row, several rows per request. */
  static async load(rows: OtherRow[], done: () => void): Promise<void> {
    // Eight fields of 2,000 dataids a request: within the server's default cost limit.
    for (let i = 0; i < rows.length; i += 8) {
      const batch = rows.slice(i, i + 8);
      batch.forEach((r) => (r.loading = true));
      try {
        const d: any = await gql(
          `query(${batch.map((_, k) => `$d${k}: String!`).join(", ")}) { ${batch
            .map((_, k) => `r${k}: partitionRuns(dataset: $d${k}, limit: ${limit}) { count next runs { from to count status late } }`)
            .join("\n")} }`,
          Object.fromEntries(batch.map((r, k) => [`d${k}`, r.ds.id])),
        );
        batch.forEach((r, k) => r.take(d["r" + k]));
      } catch (e) {
        batch.forEach((r) => (r.error = (e as Error).message));
      }
      batch.forEach((r) => ((r.loading = false), (r.loaded = true)));
      done();
    }
  }

  take(d: { count: number; next: string | null; runs: Run[] }) {
    this.runs = d.runs;
    this.total = d.count;
    this.more = !!d.next;
  }

  /** apply changes a chunk's status as an event says; true when drawn differently. */
  apply(id: string, to: string): boolean {
    const r = this.runs.find((r) => r.from === id && r.to === id);
    if (r) {
      r.status = to;
      return true;
    }
    return false; // inside a longer run, or new: read again
  }

  /** counts tallies the row's dataids by status (and late). */
  counts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of this.runs) {
      out[r.status] = (out[r.status] || 0) + r.count;
      if (r.late) out.late = (out.late || 0) + r.count;
    }
    return out;
  }

  view(width: number) {
    const kind = this.ds.partitions ? kindLabel(this.ds.partitions) : "no definition";
    const mark = kind === "no definition" ? "—" : kind === "integer" ? "#" : kind === "dynamic" ? "D" : this.ds.partitions?.dimensions ? "×" : "S";
    return html`<div class="grow other" data-ds=${this.ds.id} data-dataset=${this.ds.id}>
      <div class="glabel"><a href=${datasetHref(this.ds.id)}>${this.ds.id}</a> <span class="kind" title=${kind}>${mark}</span></div>
      <div class="track" style="width: ${width}px">${this.bar(width)}</div>
      <span class="muted small count">${this.loaded ? plural(this.total, "chunk") + (this.more ? "+" : "") : ""}</span>
    </div>`;
  }

  private bar(width: number) {
    if (this.error) return html`<span class="error small">${this.error}</span>`;
    if (!this.loaded) return html`<span class="loading-bar"></span>`;
    if (!this.total) {
      // A DYNAMIC set's values are listed on its page; the row draws its chunks.
      const dynamic = this.ds.partitions?.kind === "DYNAMIC";
      return html`<span class="muted small">${!this.ds.partitions ? "no chunk yet" : dynamic ? html`no chunk yet: its values are listed on <a href=${datasetHref(this.ds.id)}>its page</a>` : "no expected dataid yet"}</span>`;
    }
    const min = 3;
    const room = width - min * this.runs.length;
    let x = 0;
    return this.runs.map((r) => {
      const w = min + Math.max(0, (room * r.count) / this.total);
      const left = x;
      x += w;
      const title = `${this.ds.id} ${r.from}${r.count > 1 ? ` … ${r.to}` : ""}: ${plural(r.count, "dataid")} ${statusName(r.status)}${r.late ? " (late)" : ""}`;
      const href = r.count === 1 ? chunkHref(this.ds.id, r.from) : datasetHref(this.ds.id);
      return html`<a href=${href} class="seg s-${r.status}${r.late ? " late" : ""} block" style="left: ${left.toFixed(1)}px; width: ${w.toFixed(1)}px"
        title=${title} data-from=${r.from} data-to=${r.to}>${w > 60 ? html`<span>${r.count > 1 ? `${r.from} … ${r.to}` : r.from}</span>` : nothing}</a>`;
    });
  }
}
