package webhook

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// Late chunks are not transitions: nothing in the event log says that a
// deadline passed. The deadlines stream's record keeps, per dataset with a
// deadline, a watermark (lateMark): the instant up to which deadlines were
// checked, and the last dataid checked. A check at now lists the chunks
// whose deadline passed after the watermark and by now, alerts those not
// READY, and moves the watermark to now.
//
// The watermark is an instant, so a definition change cannot move it back
// into the past: a start moved ten years back adds chunks whose deadlines
// passed long before the watermark, and none of them is alerted; only
// chunks that become late while watched are (and those whose deadlines
// passed while no server ran, when one starts). A dataset first seen (or a
// webhook first configured) starts at now. The last dataid checked also
// keeps a longer deadline from alerting a chunk twice, and is the progress
// within a check, written after each alert: each chunk is alerted at most
// once (exactly once but for a replica stopping between a send and the
// write, as for every alert).
//
// A dataset with dimensions is watched by its time dimension's windows,
// each tuple as a chunk (SPEC §10: a tuple's deadline is its window's): a
// DYNAMIC value added is expected from its window, and one added with a
// backfill raises no alert for windows whose deadlines had passed, as a
// start moved back does not.
//
// A check sends at most LateCap alerts a dataset: when more chunks became
// late at once (a server down for a week of hours), one late_summary
// alert counts them instead of a storm.

// lateMark is a dataset's watermark.
type lateMark struct {
	// At: every chunk whose deadline passed at or before At was checked.
	// Zero for a mark taken over from a version that kept no instant.
	At time.Time `json:"at"`
	// Last is the last dataid checked ("" when none yet).
	Last string `json:"last,omitempty"`
}

func (w *worker) checkLate(ctx context.Context) error {
	store := w.d.cfg.Store
	datasets, err := store.Datasets(ctx)
	if err != nil {
		return err
	}
	jobs, err := store.Jobs(ctx)
	if err != nil {
		return err
	}
	producer := map[string]string{}
	for _, j := range jobs {
		producer[j.Output] = j.ID
	}
	now := w.d.cfg.Clock.Now()
	watched := map[string]bool{}
	for _, ds := range datasets {
		def := ds.Partitions
		if def == nil || !def.Windowed() || def.Deadline == nil {
			continue
		}
		watched[ds.ID] = true
		if err := w.keep(ctx); err != nil {
			return err
		}
		if err := w.lateOf(ctx, ds.ID, producer[ds.ID], *def, now); err != nil {
			return err
		}
	}
	for id := range w.st.Marks {
		if !watched[id] {
			delete(w.st.Marks, id)
		}
	}
	return w.save(ctx)
}

// lateOf checks one dataset at now and moves its watermark there (never
// back: a replica whose clock is behind leaves it).
func (w *worker) lateOf(ctx context.Context, dataset, job string, def partition.Def, now time.Time) error {
	mark, seen := w.st.Marks[dataset]
	byDeadline := def
	byDeadline.Lag = *def.Deadline // "due" by the deadline: late unless READY
	last, passed := byDeadline.DueBefore(now)
	if !seen {
		w.st.Marks[dataset] = lateMark{At: now, Last: last} // "" when no deadline passed yet
		return nil
	}
	if from, ok := lateFrom(def, byDeadline, mark); passed && ok && backends.CompareDataID(from, last) <= 0 {
		done, err := w.lateIn(ctx, dataset, job, *def.Deadline, from, last)
		if err != nil || !done {
			return err // !done: the definition changed since Datasets; the next check sees the new one
		}
	}
	if passed && (!def.Contains(mark.Last) || backends.CompareDataID(last, mark.Last) > 0) {
		mark.Last = last
	}
	if now.After(mark.At) {
		mark.At = now
	}
	w.st.Marks[dataset] = mark
	return nil
}

// lateFrom is the first dataid of def whose deadline may not have been
// checked under mark: after the last one whose deadline passed by mark.At,
// and after mark.Last. ok is false when none is left (def ended).
func lateFrom(def, byDeadline partition.Def, mark lateMark) (from string, ok bool) {
	from = def.Start
	if def.Kind == partition.Dimensional {
		if from, ok = def.First(); !ok {
			return "", false
		}
	}
	if checked, any := byDeadline.DueBefore(mark.At); any {
		if from, ok = def.Next(checked); !ok {
			return "", false
		}
	}
	if next, ok := def.Next(mark.Last); ok && backends.CompareDataID(next, from) > 0 {
		from = next
	}
	return from, true
}

// lateIn alerts the late chunks of dataset in [from, to], whose deadlines
// have all passed: each one, or, when there are more than LateCap, one
// summary. done is false when the definition changed under the listing.
func (w *worker) lateIn(ctx context.Context, dataset, job string, deadline time.Duration, from, to string) (done bool, err error) {
	limit := w.d.cfg.LateCap
	var first []backends.Partition // up to limit+1 of them
	var last backends.Partition
	n := 0
	late := true
	f := backends.PartitionFilter{Dataset: dataset, From: from, To: to, Late: &late, First: eventPage}
	for {
		page, err := w.d.cfg.Store.Partitions(ctx, f)
		if code := backends.CodeOf(err); code == backends.CodeInvalidArgument || code == backends.CodeNotFound {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		for _, p := range page.Partitions {
			if p.Late {
				if n++; n <= limit+1 {
					first = append(first, p)
				}
				last = p
			}
		}
		if !page.HasNextPage {
			break
		}
		if err := w.keep(ctx); err != nil {
			return false, err
		}
		f.After = page.EndCursor
	}
	if n > limit {
		return true, w.send(ctx, lateSummary(first[0], last, n, job, deadline))
	}
	for _, p := range first {
		if err := w.send(ctx, lateAlert(p, job, deadline)); err != nil {
			return false, err
		}
		w.st.Marks[dataset] = lateMark{At: w.st.Marks[dataset].At, Last: p.DataID}
		if err := w.save(ctx); err != nil {
			return false, err
		}
	}
	return true, nil
}
