package backendtest

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The model's operations on chunks (publish, hold, resubmit and its
// cascade), the locks its rows imply, and its partitions.

// publish marks a source chunk READY; refused for a dataid outside the
// dataset's partition definition and for produced datasets, and (LOCKED)
// while the chunk is on HOLD.
func (m *model) publish(dataset, dataid string) backends.Code {
	if exp, ok := m.expected[dataset]; ok && !slices.Contains(exp, dataid) {
		return backends.CodeInvalidArgument
	}
	if m.producer(dataset) != "" {
		return backends.CodeInvalidArgument
	}
	k := m.outKey(dataset, dataid)
	r := m.rows[k]
	switch {
	case r == nil:
		m.rows[k] = &mRow{status: ready}
	case r.status == hold:
		return backends.CodeLocked
	default:
		*r = mRow{status: ready, attempt: r.attempt}
	}
	return ""
}

// hold freezes a chunk, creating its row if needed; refused while RUNNING,
// and for a dataid the dataset's definition does not expect (a DYNAMIC
// set is not checked).
func (m *model) hold(dataset, dataid string) backends.Code {
	if exp, ok := m.expected[dataset]; ok && dataset != modelDynamic && !slices.Contains(exp, dataid) {
		return backends.CodeInvalidArgument
	}
	if dataset == "s" && !slices.Contains(modelScheduleIDs, dataid) {
		return backends.CodeInvalidArgument
	}
	k := m.outKey(dataset, dataid)
	r := m.rows[k]
	switch {
	case r == nil:
		m.rows[k] = &mRow{status: hold}
	case r.status == running:
		return backends.CodeLocked
	default:
		*r = mRow{status: hold, attempt: r.attempt}
	}
	return ""
}

func (m *model) clone() map[mKey]*mRow {
	out := make(map[mKey]*mRow, len(m.rows))
	for k, r := range m.rows {
		c := *r
		out[k] = &c
	}
	return out
}

// resubmit sets a chunk RESUBMIT with its attempt count reset (NOT_FOUND
// without a row, LOCKED while RUNNING). With cascade, what was computed
// from it, or failed on it, is invalidated too (invalidate); a consumer
// reading or writing right now makes the whole call LOCKED and changes
// nothing. It returns the datasets whose OUTPUT row it set.
func (m *model) resubmit(dataset, dataid string, cascade bool) ([]string, backends.Code) {
	k := m.outKey(dataset, dataid)
	r := m.rows[k]
	if r == nil {
		return nil, backends.CodeNotFound
	}
	if r.status == running {
		return nil, backends.CodeLocked
	}
	saved := m.clone()
	*r = mRow{status: resubmit}
	changed := []string{dataset}
	if !cascade {
		return changed, ""
	}
	more, bs := m.invalidate(dataset, dataid)
	if len(bs) > 0 {
		m.rows = saved
		return nil, backends.CodeLocked
	}
	return append(changed, more...), ""
}

// invalidate walks downstream from chunk (dataset, dataid): a consumer
// whose INPUT row on an invalidated chunk is DONE (it computed from it)
// gets that row ERROR and the OUTPUT row it was read for RESUBMIT; one
// whose INPUT row is ERROR and whose OUTPUT row is FAILED or HOLD (it
// failed on it) gets its OUTPUT row RESUBMIT; attempts start afresh, and
// the walk goes on below both. A consumer reading a chunk through ALL has
// read it for every output dataid it has a row for. A consumer reading
// the chunk, or writing the output it was read for, right now is a
// blocker. It returns the datasets whose OUTPUT row it set, one per chunk,
// or the blockers (the rows are then half-written: the caller restores
// them).
func (m *model) invalidate(dataset, dataid string) ([]string, []bk) {
	var changed []string
	var bs []bk
	queue := []mRead{{dataset, dataid}}
	seen := map[mRead]bool{{dataset, dataid}: true}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, c := range m.consumers(x.dataset) {
			// The reads of x by c, each with the output dataid it is for.
			type read struct {
				key   mKey
				outID string
			}
			var reads []read
			for _, k := range slices.SortedFunc(maps.Keys(m.rows), func(a, b mKey) int { return cmp.Compare(a.readFor, b.readFor) }) {
				if k.dataset == x.dataset && k.dataid == x.dataid && k.job == c.id && k.role == backends.RoleInput {
					outID := x.dataid
					if k.readFor != "" {
						outID = k.readFor
					}
					reads = append(reads, read{k, outID})
				}
			}
			for _, rd := range reads {
				in := m.rows[rd.key]
				out := m.rows[m.outKey(c.output, rd.outID)]
				outSt := none
				if out != nil {
					outSt = out.status
				}
				switch {
				case in.status == running:
					bs = append(bs, bk{backends.BlockerLocalRead, x.dataset, c.id, running})
					continue
				case in.status == done && outSt == running:
					bs = append(bs, bk{backends.BlockerOutputLocked, c.output, c.id, running})
					continue
				case in.status == done:
					in.status = errored
				case in.status == errored && (outSt == failed || (outSt == hold && (out.ended == endFail || out.ended == endExpire))):
					// c failed on this chunk, until its attempts ran out; a
					// HOLD an operator set stays
				default:
					continue // c neither computed from this chunk nor failed on it
				}
				next := mRead{c.output, rd.outID}
				if seen[next] {
					continue
				}
				seen[next] = true
				queue = append(queue, next)
				if out != nil {
					*out = mRow{status: resubmit}
					changed = append(changed, c.output)
				}
			}
		}
	}
	return changed, bs
}

// tableLocks is SPEC §2's two tables, written out.
var tableLocks = map[backends.Role]map[backends.Status][]backends.LockKind{
	backends.RoleOutput: {
		running:  {backends.LockGlobalWrite, backends.LockGlobalRead},
		ready:    {backends.LockGlobalWrite},
		failed:   {backends.LockGlobalRead},
		resubmit: {backends.LockGlobalRead},
		hold:     {backends.LockGlobalWrite, backends.LockGlobalRead},
	},
	backends.RoleInput: {
		running: {backends.LockLocalRead},
		done:    {backends.LockLocalRead},
		errored: nil,
	},
}

// chunkLocks are the locks the model's rows imply on chunk (dataset, dataid).
func (m *model) chunkLocks(dataset, dataid string) []lk {
	out := []lk{}
	for k, r := range m.rows {
		if k.dataset != dataset || k.dataid != dataid {
			continue
		}
		for _, kind := range tableLocks[k.role][r.status] {
			out = append(out, lk{dataset, dataid, kind, k.job, r.status})
		}
	}
	return out
}

// partitions lists the expected dataids of a dataset with a definition
// and the status of each one's OUTPUT row (none: missing); of a time
// definition, only the windows due by now (ended: the model's lag is 0).
func (m *model) partitions(dataset string) []string {
	var out []string
	// q totals x's customers hourly: an hour before every customer's
	// first is not due (it reads none), so it is not listed, nor missing.
	firstDue := ""
	if dataset == modelQ {
		firstDue = "~" // after every hour: no customer, nothing due
		for _, h := range m.members {
			firstDue = min(firstDue, h)
		}
	}
	for _, d := range m.expected[dataset] {
		if d < firstDue { // fixed-width hours: byte order is time order
			continue
		}
		if k := modelPartitions[dataset].Kind; k == partition.Hourly {
			if at, _ := time.Parse("2006-01-02T15", d); m.now.Before(at.Add(time.Hour)) {
				continue // its hour has not ended
			}
		} else if k.IsTime() {
			if _, last := windowDays(k, d); m.now.Before(last.AddDate(0, 0, 1)) {
				continue
			}
		}
		if modelPartitions[dataset].Kind == partition.Dimensional {
			hour, _, _ := strings.Cut(d, "|")
			if at, _ := time.Parse("2006-01-02T15", hour); m.now.Before(at.Add(time.Hour)) {
				continue // its hour's window has not ended
			}
		}
		out = append(out, d+"="+string(m.status(m.outKey(dataset, d))))
	}
	return out
}
