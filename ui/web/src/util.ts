// Small helpers shared by the dashboard's views.

// shortlex orders dataids as chunklock does: shorter first, then byte-wise.
export function shortlex(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
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

export function debounce(f: () => void, ms: number): () => void {
  let t: ReturnType<typeof setTimeout> | undefined;
  return () => {
    clearTimeout(t);
    t = setTimeout(f, ms);
  };
}

export const plural = (n: number, one: string, many = one + "s") => `${n.toLocaleString("en")} ${n === 1 ? one : many}`;

export const outputStatuses = ["READY", "RUNNING", "FAILED", "RESUBMIT", "HOLD", "NONE"] as const;
export type OutputStatus = (typeof outputStatuses)[number];
export const statusName = (s: string) => (s === "NONE" ? "missing" : s);

export const shortTime = (t: string) => t.replace("T", " ").slice(0, 19);
