// Runs the GraphQL over HTTP specification's own server audit (graphql-http's
// auditServer) against a chunklock server and fails on any finding: every
// MUST and SHOULD of the spec, warnings included.
//
//   node tools/graphql-audit.mjs http://127.0.0.1:8080/graphql [token]
import { auditServer } from "graphql-http";

const [url, token] = process.argv.slice(2);
if (!url) {
  console.error("usage: node tools/graphql-audit.mjs URL [token]");
  process.exit(2);
}
const fetchFn = token ? (input, init = {}) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init.headers)), Authorization: "Bearer " + token } }) : fetch;
const results = await auditServer({ url, fetchFn });
let bad = 0;
for (const r of results) {
  if (r.status === "ok") continue;
  bad++;
  console.log(`${r.status.toUpperCase()} ${r.id} ${r.name}: ${r.reason}`);
}
const counts = results.reduce((c, r) => ((c[r.status] = (c[r.status] || 0) + 1), c), {});
console.log(`graphql-http audit of ${url}: ${results.length} checks: ${Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(", ")}`);
process.exit(bad ? 1 : 0);
