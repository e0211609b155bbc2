// What every view shares: who the caller is, the catalog (datasets, jobs,
// live claims), and the datasets in pipeline order.
import { gql } from "./api";
import type { Kind } from "./calendar";

export interface Definition {
  /** null for a definition with dimensions */
  kind: Kind | null;
  start: string | null;
  end: string | null;
  timezone: string | null;
  values: string[] | null;
  lagSeconds: number;
  deadlineSeconds: number | null;
  dimensions: Dimension[] | null;
}
/** kindLabel names a definition's kind in lower case, or its dimensions ("date × region"). */
export function kindLabel(p: Definition): string {
  return p.dimensions ? p.dimensions.map((x) => x.name).join(" × ") : (p.kind ?? "").toLowerCase();
}
/** One named dimension of a multi-dimensional definition (dataids join its values with |). */
export interface Dimension {
  name: string;
  kind: Kind;
  start: string | null;
  end: string | null;
  timezone: string | null;
  values: string[] | null;
}
export interface Dataset {
  id: string;
  description: string;
  partitions: Definition | null;
  producer: { id: string } | null;
  latestReady: string | null;
}
export interface Mapping {
  dataset: string;
  kind: "IDENTITY" | "TIME_WINDOW" | "LATEST" | "ALL";
  startOffset: number;
  endOffset: number;
  /** an entry of a mapping by dimension: the input's dimension it maps, and the output's it maps from */
  dimension?: string | null;
  outputDimension?: string | null;
}
export interface Job {
  id: string;
  inputs: string[];
  output: string;
  paused: boolean;
  inputMappings: Mapping[];
}
export interface Claim {
  token: string | null;
  job: string;
  dataid: string;
  attempt: number;
  executor: string;
  fence: number;
  leaseExpiresAt: string;
}

export const state = {
  viewer: { name: "", role: "" },
  datasets: [] as Dataset[],
  jobs: [] as Job[],
  claims: [] as Claim[],
  byId: new Map<string, Dataset>(),
  jobById: new Map<string, Job>(),
  /** consumers of each dataset */
  readers: new Map<string, Job[]>(),
  loaded: false,
};

export const isAdmin = () => state.viewer.role === "admin";

export const claimFields = "token job dataid attempt executor fence leaseExpiresAt";

/**
 * loadCatalog reads who the caller is and the catalog, with each dataset's
 * newest READY dataid (where the grid opens). The live claims come after,
 * with refreshClaims: reading them costs the store a read per dataset.
 */
export async function loadCatalog(): Promise<void> {
  // Two requests side by side, each a bounded piece of work for the server.
  const [d, latest] = await Promise.all([
    gql(`{
      viewer { name role }
      datasets { id description partitions { kind start end timezone values lagSeconds deadlineSeconds dimensions { name kind start end timezone values } } producer { id } }
      jobs { id inputs output paused inputMappings { dataset kind startOffset endOffset dimension outputDimension } }
    }`),
    gql(`{ datasets { id latestReady } catalogChanges(first: 1) { edges { cursor } } }`),
  ]);
  catalog.newest = latest.catalogChanges.edges[0]?.cursor ?? "";
  catalog.checked = true;
  const newest = new Map<string, string | null>(latest.datasets.map((x: any) => [x.id, x.latestReady]));
  for (const x of d.datasets) x.latestReady = newest.get(x.id) ?? null;
  state.viewer = d.viewer;
  state.jobs = d.jobs;
  state.byId = new Map(d.datasets.map((x: Dataset) => [x.id, x]));
  state.jobById = new Map(d.jobs.map((j: Job) => [j.id, j]));
  state.readers = new Map();
  for (const j of state.jobs) {
    for (const i of j.inputs) {
      const l = state.readers.get(i) || [];
      l.push(j);
      state.readers.set(i, l);
    }
  }
  state.datasets = pipelineOrder(d.datasets, d.jobs);
  state.loaded = true;
}

/** the newest catalog change the page's catalog includes, and whether it was just read */
const catalog = { newest: "", checked: false };

/**
 * freshCatalog reads the catalog again when it changed since the page read
 * it (a job paused or deleted elsewhere: catalog changes come with no
 * event), asking the server for its newest change only: one small request
 * per view, none for the first view after the catalog was read.
 */
export async function freshCatalog(): Promise<boolean> {
  if (catalog.checked) {
    catalog.checked = false;
    return false;
  }
  const d = await gql(`{ catalogChanges(first: 1) { edges { cursor } } }`);
  if ((d.catalogChanges.edges[0]?.cursor ?? "") === catalog.newest) return false;
  await loadCatalog();
  catalog.checked = false;
  return true;
}

export async function refreshClaims(): Promise<void> {
  const d = await gql(`{ claims { ${claimFields} } }`);
  state.claims = d.claims;
}

/**
 * pipelineOrder sorts datasets as the pipeline flows: sources first, then
 * each dataset after everything it is computed from (by depth), by id
 * within a depth.
 */
function pipelineOrder(datasets: Dataset[], jobs: Job[]): Dataset[] {
  const from = new Map<string, string[]>();
  for (const j of jobs) from.set(j.output, j.inputs);
  const depth = new Map<string, number>();
  const visiting = new Set<string>();
  const of = (id: string): number => {
    if (depth.has(id)) return depth.get(id)!;
    if (visiting.has(id)) return 0;
    visiting.add(id);
    let d = 0;
    for (const i of from.get(id) || []) d = Math.max(d, of(i) + 1);
    visiting.delete(id);
    depth.set(id, d);
    return d;
  };
  return [...datasets].sort((a, b) => of(a.id) - of(b.id) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export const mappingOf = (j: Job, input: string): Mapping | undefined => j.inputMappings.find((m) => m.dataset === input);

export const outputOf = (job: string) => state.jobById.get(job)?.output || "";

export const chunkHref = (ds: string, id: string) => `#/chunk/${encodeURIComponent(ds)}/${encodeURIComponent(id)}`;
export const datasetHref = (ds: string) => `#/dataset/${encodeURIComponent(ds)}`;
export const jobHref = (job: string) => `#/job/${encodeURIComponent(job)}`;
