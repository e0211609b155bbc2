package webhook

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Late chunks are not transitions: nothing in the event log says that a
// deadline passed. The record keeps, per dataset with a deadline, a
// watermark: the last dataid whose deadline was checked. Deadlines pass in
// dataid order (a window's end + the deadline grows with the dataid), so a
// check lists, between the watermark and the last dataid whose deadline
// has passed now, the chunks that are not READY, alerts each (the
// watermark following, written after each), and moves the watermark to
// that last dataid. Each chunk is thus checked once, when its deadline
// has passed, and alerted at most once (exactly once but for a replica
// stopping between a send and the write, as for every alert). A dataset
// first seen (or a webhook first configured) starts at the deadlines
// passed by then: only chunks that become late afterwards are alerted.

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
	dirty := false
	watched := map[string]bool{}
	for _, ds := range datasets {
		def := ds.Partitions
		if def == nil || !def.Kind.IsTime() || def.Deadline == nil {
			continue
		}
		watched[ds.ID] = true
		byDeadline := *def
		byDeadline.Lag = *def.Deadline // "due" by the deadline: late unless READY
		last, passed := byDeadline.DueBefore(now)
		mark, seen := w.st.Late[ds.ID]
		switch {
		case !seen:
			w.st.Late[ds.ID], dirty = last, true // "" when no deadline passed yet
			continue
		case !passed || (mark != "" && backends.CompareDataID(last, mark) <= 0):
			continue
		}
		from := ""
		if mark != "" {
			next, ok := def.Next(mark)
			if !ok { // the definition changed: start over at now
				w.st.Late[ds.ID], dirty = last, true
				continue
			}
			from = next
		}
		if err := w.lateIn(ctx, ds.ID, producer[ds.ID], *def.Deadline, from, last); err != nil {
			return err
		}
		dirty = false // lateIn saved
	}
	for id := range w.st.Late {
		if !watched[id] {
			delete(w.st.Late, id)
			dirty = true
		}
	}
	if dirty {
		return w.save(ctx)
	}
	return nil
}

// lateIn alerts the late chunks of dataset in [from, to] ("" from: the
// first expected dataid), whose deadlines have all passed, then moves the
// watermark to to.
func (w *worker) lateIn(ctx context.Context, dataset, job string, deadline time.Duration, from, to string) error {
	late := true
	f := backends.PartitionFilter{Dataset: dataset, From: from, To: to, Late: &late, First: eventPage}
	for {
		page, err := w.d.cfg.Store.Partitions(ctx, f)
		if backends.CodeOf(err) == backends.CodeInvalidArgument || backends.CodeOf(err) == backends.CodeNotFound {
			break // the definition changed since Datasets: start over at to
		}
		if err != nil {
			return err
		}
		for _, p := range page.Partitions {
			if !p.Late {
				continue
			}
			if err := w.send(ctx, lateAlert(p, job, deadline)); err != nil {
				return err
			}
			w.st.Late[dataset] = p.DataID
			if err := w.save(ctx); err != nil {
				return err
			}
		}
		if !page.HasNextPage {
			break
		}
		f.After = page.EndCursor
	}
	w.st.Late[dataset] = to
	return w.save(ctx)
}
