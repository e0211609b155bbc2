// Small helpers shared by the dashboard's views.

export function esc(s: unknown): string {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

// shortlex orders dataids as chunklock does: shorter first, then byte-wise.
export function shortlex(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

const dateRe = /^\d{4}-\d{2}-\d{2}$/;

export function isDate(s: string): boolean {
  return dateRe.test(s);
}

export function today(): string {
  return new Date().toISOString().slice(0, 10);
}

export function addDays(d: string, n: number): string {
  const t = Date.parse(d + "T00:00:00Z") + n * 86400000;
  return new Date(t).toISOString().slice(0, 10);
}

export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(to + "T00:00:00Z") - Date.parse(from + "T00:00:00Z")) / 86400000);
}

// countdown spells the time left until t (RFC 3339): "1m 05s", or "expired".
export function countdown(t: string, now = Date.now()): string {
  const ms = Date.parse(t) - now;
  if (ms <= 0) return "expired";
  const s = Math.floor(ms / 1000);
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  if (h > 0) return `${h}h ${String(m % 60).padStart(2, "0")}m`;
  if (m > 0) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  return `${s}s`;
}

export function ago(t: string): string {
  const s = Math.round((Date.now() - Date.parse(t)) / 1000);
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86400) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86400)}d ago`;
}

export function h(html: string): HTMLElement {
  const t = document.createElement("template");
  t.innerHTML = html.trim();
  return t.content.firstElementChild as HTMLElement;
}

export const outputStatuses = ["READY", "RUNNING", "FAILED", "RESUBMIT", "HOLD", "NONE"] as const;

// Layered layout of a directed graph, left to right: each node's column is
// the length of the longest path reaching it; within a column nodes are
// ordered by the mean row of their predecessors (fewer crossings).
export function layers(ids: string[], edges: [string, string][]): Map<string, { col: number; row: number }> {
  const preds = new Map<string, string[]>();
  ids.forEach((id) => preds.set(id, []));
  for (const [a, b] of edges) if (preds.has(a) && preds.has(b)) preds.get(b)!.push(a);
  const col = new Map<string, number>();
  const visiting = new Set<string>();
  const depth = (id: string): number => {
    if (col.has(id)) return col.get(id)!;
    if (visiting.has(id)) return 0; // a cycle: cut it here
    visiting.add(id);
    let d = 0;
    for (const p of preds.get(id)!) d = Math.max(d, depth(p) + 1);
    visiting.delete(id);
    col.set(id, d);
    return d;
  };
  ids.forEach(depth);
  const cols: string[][] = [];
  for (const id of ids) (cols[col.get(id)!] ||= []).push(id);
  const pos = new Map<string, { col: number; row: number }>();
  cols.forEach((members, c) => {
    const key = (id: string) => {
      const ps = preds.get(id)!.filter((p) => pos.has(p));
      return ps.length ? ps.reduce((s, p) => s + pos.get(p)!.row, 0) / ps.length : Infinity;
    };
    members
      .map((id) => ({ id, k: key(id) }))
      .sort((a, b) => (a.k === b.k ? (a.id < b.id ? -1 : 1) : a.k - b.k))
      .forEach((m, row) => pos.set(m.id, { col: c, row }));
  });
  return pos;
}
