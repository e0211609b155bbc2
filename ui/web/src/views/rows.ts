// The partition grid's rows: what the server answered for a dataset over
// the visible columns (partitionRuns), and the segments that draw it. A row
// of a dataset as fine as the zoom draws its runs cell by cell; a coarser
// one draws each dataid across the columns its window covers (a week over
// seven days); a finer one draws per column what the column holds (24
// hours in a day), from the server's per-column counts.
import { gql } from "../api";
import { columns, count, finer, format, ordinal, periodsIn, type Zoom } from "../calendar";
import type { Dataset } from "../state";

export interface Run {
  from: string;
  to: string;
  count: number;
  status: string;
  late: boolean;
}
export interface ColRun {
  from: string;
  to: string;
  columns: number;
  count: number;
  ready: number;
  running: number;
  failed: number;
  resubmit: number;
  hold: number;
  missing: number;
  late: number;
}
/** a drawn stretch of columns [a, b] of one look. */
export interface Segment {
  a: number;
  b: number;
  status: string; // a status, or MIXED
  late: boolean;
  /** separate the columns (cells), or draw one block (a coarser dataid) */
  cells: boolean;
  /** the dataid of a coarser dataset's block */
  id?: string;
  counts?: ColRun;
}

export type Mode = "cells" | "spans" | "summary";

/** one dimension's value of a sliced row */
export interface SliceValue {
  dimension: string;
  value: string;
}

const runFields = "runs { from to count status late }";
const colFields = "columns { from to columns count ready running failed resubmit hold missing late }";

/** at most this many of a dataset's dataids per field (one part): one request's worth. */
const partLimit = 16000;

export class TimeRow {
  kind: Zoom;
  mode: Mode = "cells";
  zoom: Zoom = "DAILY";
  c0 = 0;
  c1 = -1;
  runs: Run[] = [];
  cols: ColRun[] = [];
  loaded = false;
  loading = false;
  /** parts still being read */
  pending = 0;
  /** counts views, so that an answer for an earlier view is dropped */
  gen = 0;
  error = "";
  changesAt = Infinity;
  segments: Segment[] = [];

  /**
   * slice, for a dataset with dimensions (a date, a region, a product), is
   * the value of each dimension after the first this row draws, in
   * declared order: its dataids are tuples whose first value is of kind,
   * one per column.
   */
  slice: SliceValue[] | null = null;
  /** by names the dimension of the slice whose value the row stands for (null: one slice, every value fixed) */
  by: string | null = null;

  constructor(
    public ds: Dataset,
    slice?: SliceValue[],
    by?: string | null,
  ) {
    this.kind = (slice ? ds.partitions!.dimensions![0].kind : ds.partitions!.kind) as Zoom;
    if (slice) this.slice = slice;
    this.by = by ?? null;
  }

  /** tail is the values of a sliced row's dataids after the first, joined as in a dataid. */
  get tail(): string {
    return this.slice ? this.slice.map((s) => s.value).join("|") : "";
  }

  /** key names the row: its dataset, and the values it draws of a dataset with dimensions (ds|eu|p1). */
  get key(): string {
    return this.slice ? `${this.ds.id}|${this.tail}` : this.ds.id;
  }

  /** label is what the row's label adds to the dataset's id: the value of by, or every fixed value. */
  get label(): string {
    if (!this.slice) return "";
    const v = this.slice.find((s) => s.dimension === this.by);
    return v ? v.value : this.slice.map((s) => s.value).join(" · ");
  }

  /** sliceText spells the row's slice: "region eu, product p1". */
  get sliceText(): string {
    return (this.slice || []).map((s) => `${s.dimension} ${s.value}`).join(", ");
  }

  /** sliceInput is the row's slice as partitionRuns takes it. */
  sliceInput(): { dimension: string; values: string[] }[] {
    return (this.slice || []).map((s) => ({ dimension: s.dimension, values: [s.value] }));
  }

  /** width is how many dataids the row has per period of its kind, at most: the product of its slice's values (one). */
  get width(): number {
    return this.sliceInput().reduce((n, s) => n * s.values.length, 1);
  }

  /** head is a dataid's value of the row's kind (a tuple's first). */
  head(id: string): string {
    return this.slice ? id.split("|")[0] : id;
  }

  /** dataid is the row's dataid at a value of its kind (a tuple for a slice row). */
  dataid(v: string): string {
    return this.slice ? `${v}|${this.tail}` : v;
  }

  /** setView points the row at columns [c0, c1] of zoom; true when it must load again. */
  setView(zoom: Zoom, c0: number, c1: number): boolean {
    if (this.zoom === zoom && this.c0 === c0 && this.c1 === c1 && (this.loaded || this.loading)) return false;
    this.gen++;
    this.zoom = zoom;
    this.c0 = c0;
    this.c1 = c1;
    this.mode = this.kind === zoom ? "cells" : finer(this.kind, zoom) ? "summary" : "spans";
    this.loaded = false;
    this.runs = [];
    this.cols = [];
    this.segments = [];
    this.changesAt = Infinity;
    return true;
  }

  /** reset makes the row read its view again, drawing what it has until then. */
  reset() {
    this.gen++;
    this.runs = [];
    this.cols = [];
    this.changesAt = Infinity;
  }

  /** parts splits the view into column ranges of at most partLimit dataids. */
  parts(): { c0: number; c1: number; lo: number; hi: number }[] {
    const out = [];
    // A slice is read by key: four times the cost, for each of its tuples of a period.
    const limit = this.slice ? partLimit / 4 / this.width : partLimit;
    for (let c = this.c0; c <= this.c1; ) {
      let e = this.c1;
      let [lo, hi] = periodsIn(this.kind, this.zoom, c, e);
      while (count(lo, hi) > limit && e > c) {
        e = c + Math.floor((e - c) / 2);
        [lo, hi] = periodsIn(this.kind, this.zoom, c, e);
      }
      if (count(lo, hi) > 0) out.push({ c0: c, c1: e, lo, hi });
      c = e + 1;
    }
    return out;
  }

  selection(): string {
    return `count next changesAt ${this.mode === "summary" ? colFields : runFields}`;
  }

  /** take adds what one part's field answered. */
  take(r: { runs?: Run[]; columns?: ColRun[]; changesAt: string | null }) {
    if (r.runs) this.runs.push(...r.runs);
    if (r.columns) this.cols.push(...r.columns);
    if (r.changesAt) this.changesAt = Math.min(this.changesAt, Date.parse(r.changesAt));
  }

  /** draw computes the segments from what was loaded. */
  draw() {
    this.segments = this.mode === "summary" ? this.summarySegments() : this.runSegments();
  }

  private runSegments(): Segment[] {
    const out: Segment[] = [];
    for (const r of this.runs) {
      const lo = ordinal(this.kind, this.head(r.from));
      const hi = ordinal(this.kind, this.head(r.to));
      if (this.mode === "cells") {
        out.push({ a: lo, b: hi, status: r.status, late: r.late, cells: true });
        continue;
      }
      for (let p = lo; p <= hi; p++) {
        const [a, b] = columns(this.kind, p, this.zoom);
        out.push({ a, b, status: r.status, late: r.late, cells: false, id: this.dataid(format(this.kind, p)) });
      }
    }
    return out;
  }

  private summarySegments(): Segment[] {
    return this.cols.map((c) => ({
      a: ordinal(this.zoom, c.from),
      b: ordinal(this.zoom, c.to),
      status: single(c),
      late: c.late > 0,
      cells: true,
      counts: c,
    }));
  }

  /** at returns the segment drawn at column c, if any. */
  at(c: number): Segment | undefined {
    return this.segments.find((s) => s.a <= c && c <= s.b);
  }

  /** statusOf is the status and lateness of a dataid of the row's kind, as loaded. */
  statusOf(id: string): { status: string; late: boolean } | null {
    const n = ordinal(this.kind, this.head(id));
    for (const r of this.runs) {
      if (ordinal(this.kind, this.head(r.from)) <= n && n <= ordinal(this.kind, this.head(r.to))) return { status: r.status, late: r.late };
    }
    return null;
  }

  /**
   * apply changes a dataid's status as an event says, when the row draws
   * dataids (not per-column counts: those are read again); true when it
   * changed what is drawn.
   */
  apply(id: string, to: string): boolean {
    if (this.mode === "summary") return false;
    if (this.slice && id.slice(id.indexOf("|") + 1) !== this.tail) return false;
    const n = ordinal(this.kind, this.head(id));
    const i = this.runs.findIndex((r) => ordinal(this.kind, this.head(r.from)) <= n && n <= ordinal(this.kind, this.head(r.to)));
    if (i < 0) return false;
    const r = this.runs[i];
    const lo = ordinal(this.kind, this.head(r.from));
    const hi = ordinal(this.kind, this.head(r.to));
    const late = to === "READY" ? false : r.late;
    const parts: Run[] = [];
    if (n > lo) parts.push({ ...r, to: this.dataid(format(this.kind, n - 1)), count: n - lo });
    parts.push({ from: id, to: id, count: 1, status: to, late });
    if (n < hi) parts.push({ ...r, from: this.dataid(format(this.kind, n + 1)), count: hi - n });
    this.runs.splice(i, 1, ...parts);
    this.draw();
    return true;
  }

  /** counts tallies the row's dataids by status (and late) as loaded. */
  counts(): Record<string, number> {
    const out: Record<string, number> = {};
    const add = (k: string, n: number) => n && (out[k] = (out[k] || 0) + n);
    for (const r of this.runs) {
      add(r.status, r.count);
      if (r.late) add("late", r.count);
    }
    for (const c of this.cols) {
      const k = c.columns;
      add("READY", c.ready * k);
      add("RUNNING", c.running * k);
      add("FAILED", c.failed * k);
      add("RESUBMIT", c.resubmit * k);
      add("HOLD", c.hold * k);
      add("NONE", c.missing * k);
      add("late", c.late * k);
    }
    return out;
  }
}

/** single is the one status every partition of a column has, or MIXED. */
function single(c: ColRun): string {
  const held = mix(c);
  return held.length === 1 ? held[0][0] : "MIXED";
}

/** the statuses of a column's counts, most first, for drawing and hover. */
export function mix(c: ColRun): [string, number][] {
  return (
    [
      ["READY", c.ready],
      ["RUNNING", c.running],
      ["FAILED", c.failed],
      ["RESUBMIT", c.resubmit],
      ["HOLD", c.hold],
      ["NONE", c.missing],
    ] as [string, number][]
  ).filter(([, n]) => n > 0);
}

/** fieldCost is what a field asking n dataids costs the server (see the schema; a slice's read by key cost four times). */
const fieldCost = (n: number, sliced = false) => Math.ceil(n / (sliced ? 5 : 20)) + 16;
const requestBudget = 900;
const maxFields = 24;

interface Field {
  row: TimeRow;
  part: { lo: number; hi: number };
  gen: number;
}

/** limitOf is the dataids a field may look at: its periods (and one more), times a slice's tuples per period. */
const limitOf = (f: Field) => (count(f.part.lo, f.part.hi) + 1) * f.row.width;

/**
 * load reads the rows' views, a few requests at a time, each within the
 * server's default cost limit, and calls done as each request's rows are
 * complete. A request refused for its cost is split in two.
 */
export async function loadRows(rows: TimeRow[], done: (rows: TimeRow[]) => void): Promise<void> {
  const fields: Field[] = [];
  for (const row of rows) {
    const parts = row.parts();
    row.loading = true;
    row.error = "";
    row.pending = parts.length;
    for (const part of parts) fields.push({ row, part, gen: row.gen });
    if (!parts.length) {
      row.loading = false;
      row.loaded = true;
      row.draw();
    }
  }
  const batches: Field[][] = [];
  let cur: Field[] = [];
  let cost = 0;
  for (const f of fields) {
    const c = fieldCost(limitOf(f), !!f.row.slice);
    if (cur.length && (cost + c > requestBudget || cur.length >= maxFields)) {
      batches.push(cur);
      cur = [];
      cost = 0;
    }
    cur.push(f);
    cost += c;
  }
  if (cur.length) batches.push(cur);
  const queue = [...batches];
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let b = queue.shift(); b; b = queue.shift()) done(await readBatch(b));
    }),
  );
}

async function readBatch(batch: Field[]): Promise<TimeRow[]> {
  const decl: string[] = [];
  const sel: string[] = [];
  const vars: Record<string, unknown> = {};
  batch.forEach((f, i) => {
    const { row, part } = f;
    decl.push(`$d${i}: String!, $f${i}: String, $t${i}: String, $l${i}: Int` + (row.slice ? `, $s${i}: [DimensionSliceInput!]` : ""));
    const zoom = row.mode === "summary" ? `, zoom: ${row.zoom}` : "";
    const slice = row.slice ? `, slice: $s${i}` : "";
    sel.push(`r${i}: partitionRuns(dataset: $d${i}, from: $f${i}, to: $t${i}, limit: $l${i}${zoom}${slice}) { ${row.selection()} }`);
    Object.assign(vars, { [`d${i}`]: row.ds.id, [`f${i}`]: format(row.kind, part.lo), [`t${i}`]: format(row.kind, part.hi), [`l${i}`]: limitOf(f) });
    if (row.slice) vars[`s${i}`] = row.sliceInput();
  });
  try {
    const d: any = await gql(`query(${decl.join(", ")}) { ${sel.join("\n")} }`, vars);
    batch.forEach((f, i) => f.gen === f.row.gen && f.row.take(d["r" + i]));
  } catch (e) {
    if (batch.length > 1 && /complexity|selections|aliases|tokens/i.test((e as Error).message)) {
      const half = Math.ceil(batch.length / 2);
      return [...(await readBatch(batch.slice(0, half))), ...(await readBatch(batch.slice(half)))];
    }
    for (const f of batch) if (f.gen === f.row.gen) f.row.error = (e as Error).message;
  }
  const complete: TimeRow[] = [];
  for (const f of batch) {
    if (f.gen === f.row.gen && --f.row.pending === 0) {
      f.row.loading = false;
      f.row.loaded = true;
      f.row.draw();
      complete.push(f.row);
    }
  }
  return complete;
}
