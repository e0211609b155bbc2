// What the pipeline graph writes on an edge from an input to its job: the
// input's mapping (SPEC §9), as the job reads it.
import { finer, isTime, unit } from "./calendar";
import { mappingOf, state, type Job, type Mapping } from "./state";

/** mappingLabel names the mapping of input of job j; "" for IDENTITY. */
export function mappingLabel(j: Job, input: string): string {
  const entries = j.inputMappings.filter((m) => m.dataset === input && (m.dimension || m.outputDimension));
  if (entries.length) return withEach(j, input, entries.map((m) => byDimension(j, input, m)).filter((l) => l).join("; "));
  const m = mappingOf(j, input);
  if (!m) return acrossDimensions(j, input);
  return withEach(j, input, windowLabel(m, state.byId.get(j.output)?.partitions?.kind, state.byId.get(input)?.partitions?.kind));
}

/**
 * withEach adds to the label of a one-dimensional input mapped into an
 * output with dimensions the output's dimensions other than its time one,
 * each value of which reads the same chunks ("LATEST, each region").
 */
function withEach(j: Job, input: string, label: string): string {
  const out = state.byId.get(j.output)?.partitions?.dimensions || [];
  if (!label || !out.length || state.byId.get(input)?.partitions?.dimensions?.length) return label;
  const each = out.filter((d) => !isTime(d.kind)).map((d) => `each ${d.name}`);
  return [label, ...each].join(", ");
}

/**
 * byDimension names an entry of a mapping by dimension: the mapping on its
 * pair of dimensions, after the input's dimension's name ("date: -6..0
 * days", "hour: day of hours"; "all regions" for ALL).
 */
function byDimension(j: Job, input: string, m: Mapping): string {
  const dim = (id: string, name?: string | null) => {
    const p = state.byId.get(id)?.partitions;
    return name ? p?.dimensions?.find((d) => d.name === name)?.kind : p?.kind;
  };
  if (m.kind === "ALL") return `all ${m.dimension ? plural(m.dimension) : "of it"}`;
  const label = windowLabel(m, dim(j.output, m.outputDimension), dim(input, m.dimension));
  return label ? `${m.dimension || input}: ${label}` : "";
}

/** windowLabel names a one-dimensional mapping between kinds out and inp. */
function windowLabel(m: Mapping, out: string | null | undefined, inp: string | null | undefined): string {
  if (m.kind === "IDENTITY") return "";
  if (m.kind !== "TIME_WINDOW") return m.kind;
  if (!isTime(out) || !isTime(inp)) return "time window";
  const many = unit[inp][1];
  const offsets = m.startOffset || m.endOffset ? `${m.startOffset}..${m.endOffset} ${many}` : "";
  if (finer(inp, out)) return `${unit[out][0]} of ${many}` + (offsets ? `, ${offsets}` : "");
  if (finer(out, inp)) return `${unit[inp][0]} of the ${unit[out][0]}` + (offsets ? `, ${offsets}` : "");
  return offsets || `same ${unit[inp][0]}`;
}

/**
 * acrossDimensions names how a job reads an input without a mapping when
 * either has dimensions (SPEC §10's rules by name): the input's dimensions
 * the output lacks are read whole ("all regions"), the output's the input
 * lacks read the same chunk for each value ("each region"); "" when they
 * are the same dimensions.
 */
function acrossDimensions(j: Job, input: string): string {
  const dims = (id: string) => state.byId.get(id)?.partitions?.dimensions || [];
  const out = dims(j.output);
  const inp = dims(input);
  if (!out.length && !inp.length) return "";
  // A one-dimensional side's axis pairs with the other's time dimension.
  const oneAxisTime = (id: string) => !dims(id).length && isTime(state.byId.get(id)?.partitions?.kind);
  const pairs = (d: { name: string; kind: string }, other: { name: string }[], otherId: string) =>
    other.some((o) => o.name === d.name) || (oneAxisTime(otherId) && isTime(d.kind));
  const whole = inp.filter((d) => !pairs(d, out, j.output)).map((d) => `all ${plural(d.name)}`);
  const each = out.filter((d) => !pairs(d, inp, input)).map((d) => `each ${d.name}`);
  return [...whole, ...each].join(", ");
}

function plural(n: string): string {
  return n.endsWith("y") ? n.slice(0, -1) + "ies" : n.endsWith("s") ? n : n + "s";
}
