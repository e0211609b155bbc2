// Builds ../dist from src with esbuild: the same sources and lockfile give
// the same bytes (scripts/ui-check.sh relies on it).
import * as esbuild from "esbuild";

const common = {
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  legalComments: "none",
  logLevel: "warning",
  charset: "utf8",
  define: { "process.env.NODE_ENV": '"production"' },
  loader: { ".woff2": "dataurl", ".woff": "dataurl" },
};

await esbuild.build({ ...common, entryPoints: { playground: "src/playground.tsx" }, outdir: "../dist", jsx: "automatic" });
await esbuild.build({ ...common, entryPoints: { dashboard: "src/dashboard.ts" }, outdir: "../dist" });
// The pipeline graph's layout (dagre), loaded by the dashboard in a worker
// when it first draws a graph: not part of the page's first paint.
await esbuild.build({ ...common, entryPoints: { layout: "src/layout.worker.ts" }, outdir: "../dist" });
