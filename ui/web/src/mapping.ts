// What the pipeline graph writes on an edge from an input to its job: the
// input's mapping (SPEC §9), as the job reads it.
import { finer, isTime, unit } from "./calendar";
import { mappingOf, state, type Job } from "./state";

/** mappingLabel names the mapping of input of job j; "" for IDENTITY. */
export function mappingLabel(j: Job, input: string): string {
  const m = mappingOf(j, input);
  if (!m || m.kind === "IDENTITY") return "";
  if (m.kind !== "TIME_WINDOW") return m.kind;
  const out = state.byId.get(j.output)?.partitions?.kind;
  const inp = state.byId.get(input)?.partitions?.kind;
  if (!isTime(out) || !isTime(inp)) return "time window";
  const many = unit[inp][1];
  const offsets = m.startOffset || m.endOffset ? `${m.startOffset}..${m.endOffset} ${many}` : "";
  if (finer(inp, out)) return `${unit[out][0]} of ${many}` + (offsets ? `, ${offsets}` : "");
  if (finer(out, inp)) return `${unit[inp][0]} of the ${unit[out][0]}` + (offsets ? `, ${offsets}` : "");
  return offsets || `same ${unit[inp][0]}`;
}
