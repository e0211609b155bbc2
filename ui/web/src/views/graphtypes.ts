// What the page and the layout worker exchange.
export interface LayoutIn {
  key: string;
  nodes: { id: string; w: number; h: number }[];
  edges: { v: string; w: string; label: string }[];
}
export interface LayoutOut {
  key: string;
  nodes: Record<string, { x: number; y: number }>;
  edges: { v: string; w: string; points: [number, number][]; lx: number; ly: number }[];
  width: number;
  height: number;
}
