// The page's side of the layout worker (layout.worker.ts, built into
// /assets/layout.js and loaded when a graph is first drawn).
import type { LayoutIn, LayoutOut } from "./graphtypes";

let worker: Worker | null = null;
const waiting = new Map<string, ((l: LayoutOut) => void)[]>();

/** layout lays g out with dagre in the worker. */
export function layout(g: LayoutIn): Promise<LayoutOut> {
  return new Promise((resolve) => {
    if (!worker) {
      worker = new Worker("/assets/layout.js");
      worker.onmessage = (ev: MessageEvent<LayoutOut>) => {
        const w = waiting.get(ev.data.key) || [];
        waiting.delete(ev.data.key);
        w.forEach((f) => f(ev.data));
      };
    }
    const w = waiting.get(g.key);
    if (w) return w.push(resolve);
    waiting.set(g.key, [resolve]);
    worker.postMessage(g);
  });
}

/** path draws an edge through dagre's points, rounding its bends. */
export function path(p: [number, number][]): string {
  if (!p.length) return "";
  let d = `M${p[0][0]},${p[0][1]}`;
  for (let i = 1; i < p.length - 1; i++) {
    const [x, y] = p[i];
    const [nx, ny] = p[i + 1];
    d += ` Q${x},${y} ${(x + nx) / 2},${(y + ny) / 2}`;
  }
  return d + ` L${p[p.length - 1][0]},${p[p.length - 1][1]}`;
}
