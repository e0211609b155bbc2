package backendtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The model test's operations: what one step does (op), and how a step is
// drawn (randomOp).

type op struct {
	kind    string
	job     string
	dataset string
	dataid  string
	cascade bool
	paused  bool
	direct  bool // pause: by pauseJob/resumeJob rather than an upsert
	expire  bool
	advance time.Duration
	tok     int // index in tokens; -1: a garbage token
	from    string
	to      string
	limit   int      // limit: the job's maxConcurrent; slots: the pool's slots
	env     string   // env: the job's one env name
	offset  int      // widen: the startOffset of the job's window over d
	toks    []int    // completeMany, failMany, heartbeatMany: indexes in tokens (-1: garbage)
	values  []string // addPartitions, removePartitions: the values given
	// pipeline is the pipeline a redeclare or own names ("" for none).
	pipeline string
	// newID is the id a redeclare declares the job again under ("": its
	// own), taking its chunks over.
	newID string
}

func (o op) String() string {
	switch o.kind {
	case "findNext":
		return fmt.Sprintf("findNext(%s)", o.job)
	case "claim", "force", "blockers":
		return fmt.Sprintf("%s(%s, %s)", o.kind, o.job, o.dataid)
	case "publish", "hold":
		return fmt.Sprintf("%s(%s, %s)", o.kind, o.dataset, o.dataid)
	case "resubmit":
		return fmt.Sprintf("resubmit(%s, %s, cascade=%v)", o.dataset, o.dataid, o.cascade)
	case "publishRange", "holdRange":
		return fmt.Sprintf("%s(%s, %s, %s)", o.kind, o.dataset, o.from, o.to)
	case "resubmitRange":
		return fmt.Sprintf("resubmitRange(%s, %s, %s, cascade=%v)", o.dataset, o.from, o.to, o.cascade)
	case "advance":
		return fmt.Sprintf("advance(%s, expire=%v)", o.advance, o.expire)
	case "pause":
		switch {
		case o.direct && o.paused:
			return fmt.Sprintf("pauseJob(%s)", o.job)
		case o.direct:
			return fmt.Sprintf("resumeJob(%s)", o.job)
		}
		return fmt.Sprintf("upsertJob(%s, paused=%v)", o.job, o.paused)
	case "expire":
		return "expireLeases()"
	case "limit":
		return fmt.Sprintf("upsertJob(%s, maxConcurrent=%d)", o.job, o.limit)
	case "slots":
		return fmt.Sprintf("upsertPool(%s, slots=%d)", modelPool, o.limit)
	case "env", "envAllow":
		return fmt.Sprintf("%s(%s %s)", o.kind, o.job, o.env)
	case "partitions":
		return fmt.Sprintf("partitions(%s)", o.dataset)
	case "deleteDataset":
		return fmt.Sprintf("deleteDataset(%s, deleteChunks=%v)", o.dataset, o.cascade)
	case "widen":
		return fmt.Sprintf("upsertJob(%s, d: TIME_WINDOW startOffset=%d)", o.job, o.offset)
	case "claimNext":
		return fmt.Sprintf("claimNext(%s, max=%d)", o.job, o.limit)
	case "redeclare":
		id := o.job
		if o.newID != "" {
			id = o.newID
		}
		return fmt.Sprintf("deleteJob(%s) and upsertJob(%s, pipeline=%q)", o.job, id, o.pipeline)
	case "own":
		if o.direct {
			return fmt.Sprintf("upsertPool(%s, pipeline=%q)", modelPool, o.pipeline)
		}
		return fmt.Sprintf("upsertJob(%s, pipeline=%q)", o.job, o.pipeline)
	case "completeMany", "failMany", "heartbeatMany":
		return fmt.Sprintf("%s(tokens #%v)", o.kind, o.toks)
	case "prune":
		return pruneString(o)
	case "addPartitions", "removePartitions":
		return fmt.Sprintf("%s(%s, %v)", o.kind, modelDynamic, o.values)
	case "addDimension":
		return fmt.Sprintf("addPartitions(%s, customer, %v, from=%q)", modelX, o.values, o.from)
	case "removeDimension":
		return fmt.Sprintf("removePartitions(%s, customer, %v)", modelX, o.values)
	case "addFed":
		return fmt.Sprintf("addPartitions(%s, customer, %v)", modelZ, o.values)
	}
	return fmt.Sprintf("%s(token #%d)", o.kind, o.tok)
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// randomOp draws the next operation; weights favour the claim lifecycle.
func (h *harness) randomOp() op {
	r := h.rng
	jobs := []string{"ja", "jb", "jm", "jn", "js", "jw", "jr", "jk", "jy", "jt", "ju", "jv", "jx", "jz", "jq", "jl", "jf", "jg", "je", "jp", "jo"}
	o := op{job: pick(r, jobs), dataset: pick(r, modelDatasets), dataid: pick(r, modelDataIDs), tok: -1}
	// Locality: operations often go on with the job and dataid of the one
	// before, so that sequences reach deep states of a few chunks.
	if h.last.job != "" && r.IntN(2) == 0 {
		o.job = h.last.job
	}
	if h.last.dataid != "" && r.IntN(2) == 0 {
		o.dataid = h.last.dataid
	}
	defer func() { h.last = o }()
	weights := []struct {
		kind string
		w    int
	}{
		{"publish", 10}, {"publishAny", 1}, {"findNext", 18}, {"claim", 10}, {"force", 3},
		{"heartbeat", 5}, {"complete", 14}, {"fail", 6}, {"release", 4}, {"advance", 6}, {"expire", 2},
		{"resubmit", 6}, {"hold", 3}, {"pause", 2}, {"garbage", 1}, {"blockers", 3}, {"partitions", 2},
		{"advanceLong", 1}, {"limit", 2}, {"slots", 2},
		{"resubmitRange", 3}, {"holdRange", 2}, {"publishRange", 1}, {"widen", 1}, {"env", 2}, {"envAllow", 1},
		{"deleteDataset", 1}, {"redeclare", 3}, {"own", 3},
		{"claimNext", 8}, {"completeMany", 6}, {"failMany", 2}, {"heartbeatMany", 2},
		{"prune", 3},
		{"addPartitions", 3}, {"removePartitions", 1}, {"addDimension", 3}, {"removeDimension", 1}, {"addFed", 1},
	}
	total := 0
	for _, w := range weights {
		total += w.w
	}
	n := r.IntN(total)
	for _, w := range weights {
		if n < w.w {
			o.kind = w.kind
			break
		}
		n -= w.w
	}
	switch o.kind {
	case "publish":
		o.dataset = pick(r, modelSources)
	case "publishAny":
		o.kind = "publish"
	case "heartbeat", "complete", "fail", "release":
		if len(h.tokens) == 0 {
			o.kind = "findNext"
			break
		}
		o.tok = len(h.tokens) - 1 - r.IntN(min(3, len(h.tokens))) // mostly recent claims
		if r.IntN(4) == 0 {
			o.tok = r.IntN(len(h.tokens))
		}
	case "claimNext":
		o.limit = 1 + r.IntN(4)
	case "completeMany", "failMany", "heartbeatMany":
		h.drawTokens(r, &o)
	case "prune":
		h.drawPrune(r, &o)
	case "advance":
		o.advance = time.Duration(5+r.IntN(36)) * time.Second
		o.expire = r.IntN(10) < 7
	case "advanceLong": // the schedule's windows come due
		o.kind, o.advance, o.expire = "advance", time.Duration(10+r.IntN(31))*time.Minute, r.IntN(2) == 0
	case "resubmit", "hold":
		o.cascade = r.IntN(2) == 0
		if r.IntN(2) == 0 {
			o.dataset = h.m.job(o.job).output
		}
	case "resubmitRange", "holdRange", "publishRange":
		h.drawRange(r, &o)
	case "deleteDataset":
		o.cascade = r.IntN(2) == 0 // deleteChunks
	case "redeclare", "own":
		o.pipeline = pick(r, modelPipelines)
		o.direct = o.kind == "own" && r.IntN(3) == 0 // the pool
		if owned := h.m.ownedJobs(); o.kind == "own" && len(owned) > 0 && r.IntN(2) == 0 {
			o.job = pick(r, owned) // mostly a job with an owner, to refuse others
		}
		if o.kind == "redeclare" && h.m.envCode(h.m.job(o.job).env) != "" {
			// Declared again, the job would be refused (the operator no
			// longer allows its env): the model keeps every job.
			o.kind = "own"
		}
		if o.kind == "redeclare" && r.IntN(2) == 0 {
			// Under another id, which takes the chunks over (SPEC §11).
			j := h.m.job(o.job)
			base := j.id
			if len(j.former) > 0 {
				base = j.former[0]
			}
			o.newID = fmt.Sprintf("%s%d", base, len(j.former)+1)
		}
	case "pause":
		o.paused = !h.m.job(o.job).paused
		o.direct = r.IntN(2) == 0
	case "limit":
		o.limit = r.IntN(3) // 0: no limit
	case "slots":
		o.limit = 1 + r.IntN(3)
	case "partitions":
		o.dataset = pick(r, []string{"src2", "d", "dim", "r", "wk", modelX, modelZ, modelQ})
	case "env":
		o.env = pick(r, modelEnvNames).name
	case "addPartitions", "removePartitions":
		o.dataset = modelDynamic
		for range 1 + r.IntN(3) {
			o.values = append(o.values, pick(r, modelDataIDs))
		}
	case "addFed":
		o.dataset = modelZ
		o.values = []string{pick(r, modelCustomers)}
	case "addDimension", "removeDimension":
		o.dataset = modelX
		for range 1 + r.IntN(2) {
			o.values = append(o.values, pick(r, modelCustomers))
		}
		if o.kind == "addDimension" {
			o.from = pick(r, modelFroms)
		}
	case "garbage":
		o.kind = pick(r, []string{"heartbeat", "complete", "fail", "release"})
	case "widen":
		o.job = pick(r, []string{"jr", "jk"})
		o.offset = pick(r, []int{0, -1, -2, -3, -6, 1, -partition.MaxOffset, -partition.MaxOffset - 1})
	}
	o.job = h.m.job(o.job).id // the job's current id (a redeclare may change it)
	o.dataid = timeDataID(r, o, h.m.job(o.job).output)
	return o
}

// drawRange draws the dataset of a range operation (the job's output, a
// source, or the one drawn already) and its bounds among the dataset's own
// dataids, mostly well-formed.
func (h *harness) drawRange(r *rand.Rand, o *op) {
	o.cascade = r.IntN(2) == 0
	switch r.IntN(3) {
	case 0:
		o.dataset = h.m.job(o.job).output
	case 1:
		o.dataset = pick(r, modelSources)
	}
	if o.dataset == "s" {
		// The schedule's hourly windows are covered in ranges.go.
		o.dataset = pick(r, modelSources)
	}
	ids := modelDataIDs
	if t, ok := modelTimeIDs[o.dataset]; ok {
		ids = t
	}
	o.from, o.to = pick(r, ids), pick(r, ids)
	if backends.CompareDataID(o.from, o.to) > 0 && r.IntN(6) != 0 {
		o.from, o.to = o.to, o.from // mostly well-formed
	}
}

// timeDataID keeps operations on a dataset with a time definition at its
// own dataids (modelTimeIDs): its job is claimed at them, and once in a
// while just outside them, where a source is published and the dataset
// held too (both refused there); the dataset is resubmitted at them.
// Other operations keep the model's integer dataids.
func timeDataID(r *rand.Rand, o op, output string) string {
	var dataset string
	switch o.kind {
	case "publish", "hold", "resubmit":
		dataset = o.dataset
	case "claim", "force", "blockers":
		dataset = output
	default:
		return o.dataid
	}
	ids, timed := modelTimeIDs[dataset]
	outside := timed && o.kind != "resubmit"
	switch {
	case !timed && !slices.Contains(modelDataIDs, o.dataid):
		return pick(r, modelDataIDs) // carried over from an operation on a time dataset
	case !timed, slices.Contains(ids, o.dataid), outside && o.dataid == modelOutside[dataset]:
		return o.dataid
	case outside && r.IntN(6) == 0:
		return modelOutside[dataset]
	}
	return pick(r, ids)
}
