// Calendar arithmetic of the shared time axis. Every time dataid (an hour,
// a day, an ISO week, a month) is an ordinal of its kind, as the server
// counts periods: hours, days and months since 1970, ISO weeks numbered so
// that week n starts on the Monday 7n-3 days after 1970-01-01. A column of
// a zoom is one such period; a dataid belongs to the columns its calendar
// period covers (its local date: time zones do not move columns).

export type Kind = "HOURLY" | "DAILY" | "WEEKLY" | "MONTHLY" | "INTEGER" | "STATIC" | "DYNAMIC";
export type Zoom = "HOURLY" | "DAILY" | "WEEKLY" | "MONTHLY";

export const zooms: Zoom[] = ["HOURLY", "DAILY", "WEEKLY", "MONTHLY"];
const rank: Record<string, number> = { HOURLY: 1, DAILY: 2, WEEKLY: 3, MONTHLY: 4 };

export const isTime = (k: string | null | undefined): k is Zoom => !!k && k in rank;
/** finer: kind k has shorter periods than zoom z. */
export const finer = (k: Zoom, z: Zoom) => rank[k] < rank[z];

export const unit: Record<Zoom, [string, string]> = {
  HOURLY: ["hour", "hours"],
  DAILY: ["day", "days"],
  WEEKLY: ["week", "weeks"],
  MONTHLY: ["month", "months"],
};

const DAY = 86400000;
const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** days since 1970-01-01 of a YYYY-MM-DD date. */
export function dayOf(date: string): number {
  return Math.floor(Date.UTC(+date.slice(0, 4), +date.slice(5, 7) - 1, +date.slice(8, 10)) / DAY);
}

export function dateOf(days: number): string {
  const d = new Date(days * DAY);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}

const weekOfDay = (days: number) => Math.floor((days + 3) / 7);
const mondayOf = (week: number) => 7 * week - 3;
const monthOfDay = (days: number) => {
  const d = new Date(days * DAY);
  return d.getUTCFullYear() * 12 + d.getUTCMonth();
};
const firstDayOfMonth = (m: number) => Math.floor(Date.UTC(Math.floor(m / 12), m % 12, 1) / DAY);

/** ordinal of a dataid of a time kind; NaN when it is not one. */
export function ordinal(k: Zoom, id: string): number {
  switch (k) {
    case "HOURLY":
      return /^\d{4}-\d\d-\d\dT\d\d$/.test(id) ? dayOf(id) * 24 + +id.slice(11, 13) : NaN;
    case "DAILY":
      return /^\d{4}-\d\d-\d\d$/.test(id) ? dayOf(id) : NaN;
    case "WEEKLY": {
      const m = /^(\d{4})-W(\d\d)$/.exec(id);
      if (!m) return NaN;
      const jan4 = dayOf(`${m[1]}-01-04`);
      return weekOfDay(jan4) + +m[2] - 1;
    }
    case "MONTHLY":
      return /^\d{4}-\d\d$/.test(id) ? +id.slice(0, 4) * 12 + +id.slice(5, 7) - 1 : NaN;
  }
}

/** the dataid of ordinal n of kind k. */
export function format(k: Zoom, n: number): string {
  switch (k) {
    case "HOURLY":
      return `${dateOf(Math.floor(n / 24))}T${pad(((n % 24) + 24) % 24)}`;
    case "DAILY":
      return dateOf(n);
    case "WEEKLY": {
      const thursday = new Date((mondayOf(n) + 3) * DAY);
      const y = thursday.getUTCFullYear();
      return `${pad(y, 4)}-W${pad(n - weekOfDay(dayOf(`${pad(y, 4)}-01-04`)) + 1)}`;
    }
    case "MONTHLY":
      return `${pad(Math.floor(n / 12), 4)}-${pad((n % 12) + 1)}`;
  }
}

/** first and last day of period n of kind k (not HOURLY). */
function days(k: Zoom, n: number): [number, number] {
  switch (k) {
    case "DAILY":
      return [n, n];
    case "WEEKLY":
      return [mondayOf(n), mondayOf(n) + 6];
    default:
      return [firstDayOfMonth(n), firstDayOfMonth(n + 1) - 1];
  }
}

/** the column of zoom z that holds day d. */
function columnOfDay(z: Zoom, d: number): number {
  switch (z) {
    case "HOURLY":
      return d * 24;
    case "DAILY":
      return d;
    case "WEEKLY":
      return weekOfDay(d);
    case "MONTHLY":
      return monthOfDay(d);
  }
}

/**
 * the columns [first, last] of zoom z that period n of kind k covers: one
 * column when k is as fine as z or finer (a week in the month of its
 * Thursday, as the server counts), several when it is coarser.
 */
export function columns(k: Zoom, n: number, z: Zoom): [number, number] {
  if (k === z) return [n, n];
  if (k === "HOURLY") {
    const c = columnOfDay(z, Math.floor(n / 24));
    return [c, c];
  }
  if (finer(k, z)) {
    const anchor = k === "WEEKLY" ? mondayOf(n) + 3 : days(k, n)[0];
    const c = columnOfDay(z, anchor);
    return [c, c];
  }
  const [a, b] = days(k, n);
  if (z === "HOURLY") return [a * 24, b * 24 + 23];
  return [columnOfDay(z, a), columnOfDay(z, b)];
}

/**
 * the periods [first, last] of kind k that lie in columns [c0, c1] of zoom
 * z: those whose column is in the range (k as fine as z or finer), or those
 * that overlap it (k coarser).
 */
export function periodsIn(k: Zoom, z: Zoom, c0: number, c1: number): [number, number] {
  if (k === z) return [c0, c1];
  const first = z === "HOURLY" ? Math.floor(c0 / 24) : days(z, c0)[0];
  const last = z === "HOURLY" ? Math.floor(c1 / 24) : days(z, c1)[1];
  const of = (d: number) => (k === "HOURLY" ? d * 24 : k === "DAILY" ? d : k === "WEEKLY" ? weekOfDay(d) : monthOfDay(d));
  if (finer(k, z)) {
    if (k === "HOURLY") return [first * 24, last * 24 + 23];
    if (k === "WEEKLY") {
      // the weeks whose Thursday is in the range
      let w0 = weekOfDay(first);
      if (mondayOf(w0) + 3 < first) w0++;
      let w1 = weekOfDay(last);
      if (mondayOf(w1) + 3 > last) w1--;
      return [w0, w1];
    }
    return [of(first), of(last)];
  }
  if (z === "HOURLY") return [of(Math.floor(c0 / 24)), of(Math.floor(c1 / 24))];
  return [of(first), of(last)];
}

/** the column of zoom z holding instant t (UTC). */
export function columnAt(z: Zoom, t: number): number {
  return z === "HOURLY" ? Math.floor(t / 3600000) : columnOfDay(z, Math.floor(t / DAY));
}

/**
 * a short label of column c (the hour, the day of the month, the week, the
 * month) and the label of the larger period it opens, if it opens one (the
 * day, the month, the month, the year); major is what a column that opens
 * nothing is under.
 */
export function label(z: Zoom, c: number): { text: string; opens: boolean; major: string } {
  switch (z) {
    case "HOURLY": {
      const h = ((c % 24) + 24) % 24;
      return { text: pad(h), opens: h === 0, major: dateOf(Math.floor(c / 24)) };
    }
    case "DAILY": {
      const d = dateOf(c);
      return { text: d.slice(8), opens: d.endsWith("-01"), major: d.slice(0, 7) };
    }
    case "WEEKLY": {
      const monday = dateOf(mondayOf(c));
      return { text: format("WEEKLY", c).slice(5), opens: +monday.slice(8) <= 7, major: monday.slice(0, 7) };
    }
    case "MONTHLY": {
      const id = format("MONTHLY", c);
      return { text: id.slice(5), opens: id.endsWith("-01"), major: id.slice(0, 4) };
    }
  }
}

/** how many periods of kind k fit in the ordinal range, roughly (for limits). */
export const count = (lo: number, hi: number) => Math.max(0, hi - lo + 1);
