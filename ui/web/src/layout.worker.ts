// Lays out the pipeline graph with dagre (the layout Dagster's asset graph
// uses), in a worker: a graph of hundreds of datasets is laid out without
// holding up the page, and dagre is loaded only when a graph is drawn.
import { Graph, layout } from "@dagrejs/dagre";
import type { LayoutIn, LayoutOut } from "./views/graphtypes";

self.onmessage = (ev: MessageEvent<LayoutIn>) => {
  const { key, nodes, edges } = ev.data;
  const g = new Graph({ multigraph: false });
  g.setGraph({ rankdir: "LR", nodesep: 16, ranksep: 64, edgesep: 10, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.id, { width: n.w, height: n.h });
  for (const e of edges) g.setEdge(e.v, e.w, e.label ? { width: e.label.length * 6 + 8, height: 14, labelpos: "c" } : { width: 0, height: 0 });
  layout(g);
  const out: LayoutOut = { key, nodes: {}, edges: [], width: g.graph().width || 0, height: g.graph().height || 0 };
  for (const n of nodes) {
    const p = g.node(n.id);
    out.nodes[n.id] = { x: p.x - n.w / 2, y: p.y - n.h / 2 };
  }
  for (const e of edges) {
    const l = g.edge(e.v, e.w) as any;
    out.edges.push({ v: e.v, w: e.w, points: (l.points || []).map((p: any) => [p.x, p.y]), lx: l.x ?? 0, ly: l.y ?? 0 });
  }
  (self as any).postMessage(out);
};
