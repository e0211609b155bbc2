// The grid's dimension picker: which rows a dataset with dimensions gets on
// the time axis. A dataset whose first dimension is of a time kind and
// which has STATIC or DYNAMIC dimensions after it is drawn by default with
// a row per value of the first of those, every other dimension fixed to its
// first value (valuesOf's order: a STATIC one's as declared); its picker, a strip above its rows, chooses the
// dimension that gives the rows and the value each other one is fixed to,
// or one slice (a single row, every dimension fixed). At most maxRows rows:
// of a dimension with more values, those behind first (valueSummaries),
// then the others in valuesOf's order, and a filter box for the rest.
//
// The choice is kept in the hash beside the view (by.DS, at.DS, q.DS: see
// picksQuery) and in localStorage, so that it survives reloads, the
// overview's own links and a plain #/.
import { html, nothing } from "lit-html";
import { guard } from "lit-html/directives/guard.js";
import { gql } from "../api";
import { isTime } from "../calendar";
import { datasetHref, type Dataset, type Dimension } from "../state";
import { plural, shortlex } from "../util";

/** maxRows bounds the rows one dataset gets on the time axis. */
export const maxRows = 24;

/** a select lists at most this many values; more are typed (with suggestions) */
const maxOptions = 200;

/**
 * Pick is what the user chose for a dataset: by names the dimension whose
 * values give the rows ("": one slice; absent: the default), at the value
 * each other dimension is fixed to (absent: its first), filter what the
 * values of by must contain.
 */
export interface Pick {
  by?: string;
  at: Record<string, string>;
  filter: string;
}

export const picks = new Map<string, Pick>();

const storeKey = "chunklock.picks";

/** pickOf is a dataset's pick (a fresh default one when none was made). */
export function pickOf(ds: string): Pick {
  return picks.get(ds) ?? { at: {}, filter: "" };
}

/**
 * readPicks takes the picks kept in localStorage, and over them those the
 * hash's query names.
 */
export function readPicks(q: URLSearchParams) {
  const fromHash = new Map<string, Pick>();
  for (const [k, v] of q) {
    const m = /^(by|at|q)\.(.+)$/.exec(k);
    if (!m) continue;
    const p = fromHash.get(m[2]) ?? { at: {}, filter: "" };
    if (m[1] === "by") p.by = v === "-" ? "" : v;
    else if (m[1] === "q") p.filter = v;
    else
      for (const part of v.split(",")) {
        const i = part.indexOf(":");
        if (i > 0) p.at[part.slice(0, i)] = part.slice(i + 1);
      }
    fromHash.set(m[2], p);
  }
  // Those kept, then those of the hash over them (a link someone shared).
  picks.clear();
  try {
    const kept = JSON.parse(localStorage.getItem(storeKey) || "{}");
    for (const [k, p] of Object.entries(kept) as [string, any][]) {
      if (p && typeof p === "object") picks.set(k, { by: typeof p.by === "string" ? p.by : undefined, at: { ...(p.at || {}) }, filter: String(p.filter || "") });
    }
  } catch {
    /* nothing usable kept: the defaults */
  }
  if (fromHash.size) {
    for (const [k, p] of fromHash) picks.set(k, p);
    savePicks();
  }
}

function savePicks() {
  try {
    localStorage.setItem(storeKey, JSON.stringify(Object.fromEntries(picks)));
  } catch {
    /* storage full or refused: the hash still has them */
  }
}

/** setPick records a dataset's pick (kept for reloads). */
export function setPick(ds: string, p: Pick) {
  picks.set(ds, p);
  savePicks();
}

/** picksQuery is the picks as the hash's query parameters ("&by.sales=product&at.sales=region:eu"). */
export function picksQuery(): string {
  const enc = encodeURIComponent;
  let out = "";
  for (const [ds, p] of picks) {
    if (p.by !== undefined) out += `&by.${ds}=${p.by === "" ? "-" : enc(p.by)}`;
    const at = Object.entries(p.at).map(([d, v]) => `${d}:${enc(v)}`);
    if (at.length) out += `&at.${ds}=${at.join(",")}`;
    if (p.filter) out += `&q.${ds}=${enc(p.filter)}`;
  }
  return out;
}

// ------------------------------------------------------------- layouts

const enumerable = (x: Dimension) => x.kind === "STATIC" || x.kind === "DYNAMIC";

/** integerValues bounds the values of an INTEGER dimension the picker lists. */
const integerValues = 10000;

/**
 * onTimeAxis: a dataset with 2 to 4 dimensions, the first of a time kind,
 * at least one STATIC or DYNAMIC after it, and every one after it of
 * values the picker can list (an INTEGER one with an end, of at most
 * integerValues values).
 */
export function onTimeAxis(d: Dataset): boolean {
  const dims = d.partitions?.dimensions;
  if (!dims || dims.length < 2 || !isTime(dims[0].kind)) return false;
  const rest = dims.slice(1);
  return rest.some(enumerable) && rest.every((x) => enumerable(x) || (x.kind === "INTEGER" && x.end != null && +x.end - +(x.start ?? 0) < integerValues));
}

const sorted = new WeakMap<Dimension, string[]>();

/**
 * valuesOf is a dimension's values in the order they are shown: a STATIC
 * dimension's as declared (sizes small, medium, large; regions as the team
 * lists them), an INTEGER's in number order, a DYNAMIC's in shortlex order
 * (dataid order: they have no declared order).
 */
export function valuesOf(x: Dimension): string[] {
  let vs = sorted.get(x);
  if (!vs) {
    if (x.kind === "INTEGER") {
      vs = [];
      for (let i = +(x.start ?? 0); i <= +x.end!; i++) vs.push(String(i));
    } else if (x.kind === "STATIC") vs = [...(x.values || [])];
    else vs = [...(x.values || [])].sort(shortlex);
    sorted.set(x, vs);
  }
  return vs;
}

/** Layout is how a dataset on the time axis is drawn: its picker and the rows below it. */
export interface Layout {
  ds: Dataset;
  pick: Pick;
  /** the STATIC and DYNAMIC dimensions after the first: those that may give the rows */
  rowDims: Dimension[];
  /** the dimension whose values give the rows; null: one slice */
  by: Dimension | null;
  /** every other dimension after the first, with the value it is fixed to */
  fixed: { dim: Dimension; value: string }[];
  /** the values of by drawn, a row each, in order (one slice: a single "") */
  values: string[];
  /** how many values of by match the filter (all of them without one) */
  matching: number;
  /** the values drawn known to be behind, and how many of by's values are (null: not known) */
  behind: Set<string>;
  behindCount: number | null;
  /** why no row is drawn (a dimension with no value yet), or "" */
  empty: string;
}

/** layoutOf lays a dataset on the time axis out as its pick says. */
export function layoutOf(d: Dataset): Layout {
  const pick = pickOf(d.id);
  const dims = d.partitions!.dimensions!.slice(1);
  const rowDims = dims.filter(enumerable);
  const by = pick.by === "" ? null : (rowDims.find((x) => x.name === pick.by) ?? rowDims[0]);
  const fixed = dims.filter((x) => x !== by).map((dim) => {
    const vs = valuesOf(dim);
    const want = pick.at[dim.name];
    return { dim, value: want !== undefined && vs.includes(want) ? want : (vs[0] ?? "") };
  });
  const l: Layout = { ds: d, pick, rowDims, by, fixed, values: [], matching: 0, behind: new Set(), behindCount: null, empty: "" };
  const none = dims.find((x) => !valuesOf(x).length);
  if (none) {
    l.empty = `no ${none.name} yet`;
    return l;
  }
  if (!by) {
    l.values = [""];
    l.matching = 1;
    return l;
  }
  let vs = valuesOf(by);
  const f = pick.filter.trim().toLowerCase();
  if (f) vs = vs.filter((v) => v.toLowerCase().includes(f));
  l.matching = vs.length;
  const known = behindOf(d.id, by.name);
  if (known) {
    l.behindCount = known.count;
    // Those behind first, then the others, each in valuesOf's order (the
    // server names the first values behind in dataid order).
    const set = new Set(known.values.filter((v) => !f || v.toLowerCase().includes(f)));
    const first = vs.filter((v) => set.has(v));
    l.values = [...first, ...vs.filter((v) => !set.has(v))].slice(0, maxRows);
    for (const v of l.values) if (set.has(v)) l.behind.add(v);
  } else l.values = vs.slice(0, maxRows);
  return l;
}

/** tuple is the dataid's values after the first of a layout's row of value v of by. */
export function tupleOf(l: Layout, v: string): { dimension: string; value: string }[] {
  return l.ds.partitions!.dimensions!.slice(1).map((x) => ({
    dimension: x.name,
    value: x === l.by ? v : l.fixed.find((f) => f.dim === x)!.value,
  }));
}

// ------------------------------------------------------------- what is behind

interface Behind {
  values: string[];
  count: number | null;
}

const behindCache = new Map<string, Behind>();

const behindOf = (ds: string, dim: string) => behindCache.get(`${ds}|${dim}`);

/** needsBehind: of the datasets, the [dataset, dimension] whose rows wait for the values behind. */
function needsBehind(ds: Dataset[], fresh: boolean): [string, string][] {
  const out: [string, string][] = [];
  for (const d of ds) {
    if (!onTimeAxis(d)) continue;
    const pick = pickOf(d.id);
    const rowDims = d.partitions!.dimensions!.slice(1).filter(enumerable);
    const by = pick.by === "" ? null : (rowDims.find((x) => x.name === pick.by) ?? rowDims[0]);
    if (by && valuesOf(by).length > maxRows && (fresh || !behindOf(d.id, by.name))) out.push([d.id, by.name]);
  }
  return out;
}

/** three pages of maxRows value summaries a request: 100 + 5 a value each, within the server's default limit */
const behindPerRequest = 3;

/**
 * loadBehind reads, for the datasets whose row dimension has more values
 * than rows, the first values behind (missing or late chunks), which are
 * drawn first; fresh reads them again even when known. A dataset the
 * server cannot count this way is drawn in valuesOf's order.
 */
export async function loadBehind(ds: Dataset[], fresh = false): Promise<void> {
  const want = needsBehind(ds, fresh);
  const batches = [];
  for (let i = 0; i < want.length; i += behindPerRequest) batches.push(want.slice(i, i + behindPerRequest));
  await Promise.all(
    batches.map(async (b) => {
      const q = b
        .map((_, i) => `b${i}: dataset(id: $d${i}) { valueSummaries(dimension: $m${i}, behind: true, first: ${maxRows}) { behind summaries { value } } }`)
        .join("\n");
      const decl = b.map((_, i) => `$d${i}: String!, $m${i}: String!`).join(", ");
      const vars = Object.fromEntries(b.flatMap(([d, m], i) => [[`d${i}`, d], [`m${i}`, m]]));
      try {
        const r: any = await gql(`query(${decl}) { ${q} }`, vars);
        b.forEach(([d, m], i) => {
          const p = r[`b${i}`]?.valueSummaries;
          if (p) behindCache.set(`${d}|${m}`, { values: p.summaries.map((s: any) => s.value), count: p.behind ?? null });
        });
      } catch {
        b.forEach(([d, m]) => behindCache.set(`${d}|${m}`, { values: [], count: null }));
      }
    }),
  );
}

// ------------------------------------------------------------- DYNAMIC values' expectedFrom

export interface Member {
  value: string;
  expectedFrom: string | null;
}

const membersPerRequest = 8;

const memberCache = new Map<string, { key: string; dims: Map<string, Map<string, Member>> }>();

/**
 * loadMembers reads the values of the DYNAMIC dimensions of datasets, each
 * with when it is expected from (the catalog lists their values alone),
 * once per definition: a value added changes the definition.
 */
export async function loadMembers(ds: Dataset[]): Promise<void> {
  const want = ds.filter((d) => d.partitions?.dimensions?.some((x) => x.kind === "DYNAMIC") && memberCache.get(d.id)?.key !== JSON.stringify(d.partitions));
  // Eight datasets a request: each dimension's members cost a page of
  // 1,000 rows (four dimensions of 22 a dataset), within the server's
  // default limit.
  for (let i = 0; i < want.length; i += membersPerRequest) {
    const b = want.slice(i, i + membersPerRequest);
    const r: any = await gql(
      `query(${b.map((_, k) => `$d${k}: String!`).join(", ")}) { ${b
        .map((_, k) => `m${k}: dataset(id: $d${k}) { partitions { dimensions { name members { value expectedFrom } } } }`)
        .join("\n")} }`,
      Object.fromEntries(b.map((d, k) => [`d${k}`, d.id])),
    );
    b.forEach((d, k) => {
      const dims = new Map<string, Map<string, Member>>();
      for (const x of r[`m${k}`]?.partitions?.dimensions || []) if (x.members) dims.set(x.name, new Map(x.members.map((m: Member) => [m.value, m])));
      memberCache.set(d.id, { key: JSON.stringify(d.partitions), dims });
    });
  }
}

/** memberOf is a DYNAMIC value as last read (loadMembers), if known. */
export function memberOf(ds: string, dim: string, value: string): Member | undefined {
  return memberCache.get(ds)?.dims.get(dim)?.get(value);
}

/** membersOf is a DYNAMIC dimension's values as last read, if known. */
export function membersOf(ds: string, dim: string): Map<string, Member> | undefined {
  return memberCache.get(ds)?.dims.get(dim);
}

// ------------------------------------------------------------- the picker's strip

/**
 * pickerView draws a dataset's picker: the dimension giving the rows (or
 * one slice), the value of each other dimension, and for a dimension of
 * more values than rows the filter box and how many are not shown.
 * change is called with the new pick.
 */
export function pickerView(l: Layout, change: (p: Pick) => void) {
  const d = l.ds;
  const p = l.pick;
  const set = (q: Partial<Pick>) => change({ ...p, at: { ...p.at }, ...q });
  const many = !!l.by && valuesOf(l.by).length > maxRows;
  return html`<div class="gpick" data-pick=${d.id}>
    <div class="glabel"><a href=${datasetHref(d.id)} title=${d.description || d.id}>${d.id}</a>
      <span class="kind" title="dimensions: ${d.partitions!.dimensions!.map((x) => x.name).join(" × ")}">×</span></div>
    <div class="pickers">
      <label title="which dimension gives the rows">rows <select class="pick-by" @change=${(e: Event) => set({ by: (e.target as HTMLSelectElement).value, filter: "" })}>
        ${l.rowDims.map((x) => html`<option value=${x.name} .selected=${x === l.by}>per ${x.name}</option>`)}
        <option value="" .selected=${!l.by} title="a single row, every dimension fixed">one slice</option></select></label>
      ${l.fixed.map((f) => html`<label class="pick-fixed">${f.dim.name} ${valuePicker(l, f, (v) => set({ at: { ...p.at, [f.dim.name]: v } }))}</label>`)}
      ${many || p.filter
        ? html`<input class="pick-filter" type="search" placeholder="filter ${l.by ? l.by.name + "s" : ""}" .value=${p.filter}
            @input=${filterInput((v) => set({ filter: v }))}>`
        : nothing}
      <span class="pick-note muted">${note(l)}</span>
    </div>
  </div>`;
}

/** valuePicker chooses the value a dimension is fixed to: a select, or typed when it has many values. */
function valuePicker(l: Layout, f: Layout["fixed"][0], change: (v: string) => void) {
  const vs = valuesOf(f.dim);
  if (vs.length <= maxOptions)
    return html`<select class="pick-at" data-dim=${f.dim.name} @change=${(e: Event) => change((e.target as HTMLSelectElement).value)}>
      ${guard([vs, f.value], () => vs.map((v) => html`<option .selected=${v === f.value}>${v}</option>`))}</select>`;
  const list = `pick-${l.ds.id}-${f.dim.name}`;
  return html`<input class="pick-at" data-dim=${f.dim.name} list=${list} size="10" .value=${f.value} title="one of ${plural(vs.length, "value")}"
      @change=${(e: Event) => {
        const el = e.target as HTMLInputElement;
        if (vs.includes(el.value.trim())) change(el.value.trim());
        else el.value = f.value;
      }}><datalist id=${list}>${guard([vs], () => vs.slice(0, maxOptions).map((v) => html`<option value=${v}></option>`))}</datalist>`;
}

/** filterInput calls change with what the filter box holds once typing pauses. */
function filterInput(change: (v: string) => void) {
  let t: ReturnType<typeof setTimeout> | undefined;
  return (e: Event) => {
    const el = e.target as HTMLInputElement;
    clearTimeout(t);
    t = setTimeout(() => change(el.value), 250);
  };
}

/** note says what the rows are when they are not every value: how many are not shown, how many behind. */
function note(l: Layout) {
  if (l.empty) return l.empty;
  if (!l.by) return "";
  const name = l.by.name;
  const total = valuesOf(l.by).length;
  const hidden = l.matching - l.values.length;
  const behind = l.behindCount ? html`<span class="pick-behind" title="values with missing or late chunks, drawn first">${l.behindCount.toLocaleString("en")} behind</span> · ` : nothing;
  if (l.pick.filter.trim()) {
    // "values of store", not a plural made of the dimension's name ("batchs").
    if (!l.matching) return `no ${name} of ${total.toLocaleString("en")} matches “${l.pick.filter.trim()}”`;
    return hidden > 0
      ? `${l.matching.toLocaleString("en")} of ${plural(total, "value")} of ${name} match: +${hidden.toLocaleString("en")} not drawn, type more to narrow`
      : `${l.matching.toLocaleString("en")} of ${plural(total, "value")} of ${name} match`;
  }
  return hidden > 0 ? html`${behind}+${plural(hidden, "more value")} of ${name} not drawn: type to filter` : "";
}
