package engine

import (
	"context"
	"iter"
	"slices"
	"strings"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// Missing and late counts by value of a STATIC or DYNAMIC dimension (SPEC
// §10): a customer whose feed stopped is one line, not a thousand late
// chunks. A value's expected dataids are the definition sliced to it
// (partition.Def.Sliced keeps a DYNAMIC value's since), counted by
// arithmetic; its rows by status are the counts the store keeps by value
// (backends.ValueCounter), less the rows after the last due (and the last
// late) dataid, read as a short run, as the whole dataset's counts are
// (partitionkept.go). Its oldest missing and late dataids are then found by
// reading its dataids by key, a window at a time from either end of its
// history, only for the values listed that have some. Where the kept
// counts do not answer (no ValueCounter, a definition that lost dataids,
// holds made by an earlier version, or the first dimension, whose values
// the stores do not count), each value listed is counted by reading its
// dataids by key, and the dimension's Behind is not counted.

// valueWindow is how many dataids of a value one read looks at, at most;
// firstValueWindow at first.
const (
	valueWindow      = backends.MaxPageSize
	firstValueWindow = 16
)

func (e *engine) ValueCounts(ctx context.Context, f backends.ValueCountFilter) (backends.ValueCountPage, error) {
	first := f.First
	switch {
	case first == 0:
		first = backends.DefaultPageSize
	case first < 0 || first > backends.MaxValueCountPage:
		return backends.ValueCountPage{}, backends.InvalidArgument("first must be 1 to %d, got %d", backends.MaxValueCountPage, first)
	}
	def, producer, ds, version, err := e.partitionSourceOf(ctx, f.Dataset)
	if err != nil {
		return backends.ValueCountPage{}, err
	}
	i := slices.IndexFunc(def.Dimensions, func(d partition.Dimension) bool { return d.Name == f.Dimension })
	switch {
	case def.Kind != partition.Dimensional:
		return backends.ValueCountPage{}, backends.InvalidArgument("dataset %q has no dimensions: its missing and late counts are the dataset's (partitionSummary)", f.Dataset)
	case i < 0:
		return backends.ValueCountPage{}, backends.InvalidArgument("dataset %q has no dimension %q (its dimensions: %s)", f.Dataset, f.Dimension, strings.Join(def.DimensionNames(), ", "))
	case def.Dimensions[i].Kind != partition.Static && def.Dimensions[i].Kind != partition.Dynamic:
		return backends.ValueCountPage{}, backends.InvalidArgument("dimension %s is %s: counts by value are for STATIC and DYNAMIC dimensions (list the %s dimension's dataids with partitions, from and to)",
			f.Dimension, def.Dimensions[i].Kind, def.Dimensions[i].Kind)
	}
	now := e.clock.Now()
	page := backends.ValueCountPage{Dataset: f.Dataset, Dimension: f.Dimension, At: now, Behind: -1}
	values := dimensionValues(def, i)
	page.Values = len(values)
	lastDue, _ := def.DueBefore(now)
	lastLate := ""
	if def.Deadline != nil {
		late := def
		late.Lag = *def.Deadline
		lastLate, _ = late.DueBefore(now)
	}
	if lastLate != "" && backends.CompareDataID(lastLate, lastDue) > 0 {
		lastLate = lastDue
	}
	vc := valueCounter{e: e, def: def, i: i, dataset: f.Dataset, producer: producer, lastDue: lastDue, lastLate: lastLate,
		members: map[string]partition.Member{}}
	for _, m := range def.Dimensions[i].Members {
		vc.members[m.Value] = m
	}
	kept, err := vc.kept(ctx, keptSource{ds, version})
	if err != nil {
		return page, err
	}
	if kept != nil {
		page.Behind = 0
		for _, v := range values {
			if c := kept[v.Value]; c.Missing > 0 || c.Late > 0 {
				page.Behind++
			}
		}
	}
	// The page: the values after f.After, behind ones only when asked.
	start, _ := slices.BinarySearchFunc(values, f.After, func(v partition.MemberView, id string) int { return backends.CompareDataID(v.Value, id) })
	if f.After != "" && start < len(values) && values[start].Value == f.After {
		start++
	}
	read := 0 // values counted by reading their dataids, this page
	for _, v := range values[start:] {
		if len(page.Counts) == first {
			page.HasNextPage = true
			break
		}
		var c backends.ValueCount
		if kept != nil {
			c = kept[v.Value]
		} else {
			if f.Behind && read == backends.MaxValueCountPage {
				page.HasNextPage = true // another page goes on reading
				break
			}
			read++
			if c, err = vc.read(ctx, v.Value); err != nil {
				return page, err
			}
		}
		if f.Behind && c.Missing == 0 && c.Late == 0 {
			continue
		}
		c.Value, c.ExpectedFrom = v.Value, v.ExpectedFrom
		if kept != nil && !f.WithoutOldest && (c.Missing > 0 || c.Late > 0) {
			if err := vc.oldest(ctx, &c); err != nil {
				return page, err
			}
		}
		page.Counts = append(page.Counts, c)
	}
	return page, nil
}

// dimensionValues lists the values of STATIC or DYNAMIC dimension i of
// def in shortlex order (a STATIC one's with no ExpectedFrom).
func dimensionValues(def partition.Def, i int) []partition.MemberView {
	if def.Dimensions[i].Kind == partition.Dynamic {
		return def.DimensionMembers(i)
	}
	out := make([]partition.MemberView, 0, len(def.Dimensions[i].Values))
	for _, v := range def.Dimensions[i].Values {
		out = append(out, partition.MemberView{Member: partition.Member{Value: v}})
	}
	slices.SortFunc(out, func(a, b partition.MemberView) int { return backends.CompareDataID(a.Value, b.Value) })
	return out
}

// valueCounter counts one dimension's values of a dataset.
type valueCounter struct {
	e                 *engine
	def               partition.Def
	i                 int
	dataset, producer string
	lastDue, lastLate string
	members           map[string]partition.Member // of a DYNAMIC dimension, by value
}

// sliced is the definition sliced to value v (partition.Def.Sliced, made
// without looking at the other values).
func (vc valueCounter) sliced(v string) (partition.Def, bool) {
	dim := vc.def.Dimensions[vc.i]
	one := partition.Dimension{Name: dim.Name, Def: partition.Def{Kind: partition.Static, Values: []string{v}}}
	if dim.Kind == partition.Dynamic {
		m, ok := vc.members[v]
		if !ok {
			return partition.Def{}, false
		}
		one.Def = partition.Def{Kind: partition.Dynamic, Members: []partition.Member{m}}
	}
	d := vc.def
	d.Dimensions = slices.Clone(d.Dimensions)
	d.Dimensions[vc.i] = one
	return d, true
}

// kept counts every value's missing and late dataids from the counts kept
// by value, or answers nil when they do not answer (see the top).
func (vc valueCounter) kept(ctx context.Context, src keptSource) (map[string]backends.ValueCount, error) {
	counter, ok := vc.e.b.(backends.ValueCounter)
	if !ok || vc.i == 0 {
		return nil, nil
	}
	if ok, err := vc.e.rowsConform(ctx, vc.dataset, vc.def, src.ds.UpdatedAt, src.version); err != nil || !ok {
		return nil, err
	}
	out := map[string]backends.ValueCount{}
	if vc.lastDue == "" {
		return out, nil // nothing due: nothing missing
	}
	tailFrom := vc.lastDue
	if vc.lastLate != "" {
		tailFrom = vc.lastLate
	}
	last, _ := vc.def.Last()
	// The rows after tailFrom, the counts, those rows again: the counts
	// hold the rows read when both reads agree (as keptReads).
	ids, sts, full, err := vc.e.boundedStatuses(ctx, vc.dataset, vc.producer, tailFrom, last, maxKeptTail)
	var byValue map[string]map[backends.Status]int
	agreed := false
	for range keptTries {
		if err != nil || !full {
			return nil, err
		}
		if byValue, err = counter.CountValueStatuses(ctx, vc.dataset, vc.producer, vc.i); err != nil {
			return nil, err
		}
		again, againSts, againFull, err2 := vc.e.boundedStatuses(ctx, vc.dataset, vc.producer, tailFrom, last, maxKeptTail)
		if err2 == nil && againFull && slices.Equal(ids, again) && slices.Equal(sts, againSts) {
			agreed = true
			break
		}
		ids, sts, full, err = again, againSts, againFull, err2
	}
	if !agreed {
		return nil, err
	}
	holds := 0
	for _, m := range byValue {
		holds += m[backends.StatusHold] + m[backends.StatusResubmit]
	}
	if holds > 0 {
		if ok, err := vc.e.holdsChecked(ctx, src.ds); err != nil || !ok {
			return nil, err
		}
	}
	// The rows after the last due (and the last late) dataid, by value.
	ahead, aheadLate, readyAheadLate := map[string]int{}, map[string]int{}, map[string]int{}
	for k, id := range ids {
		values, ok := vc.def.SplitDataID(id)
		if !ok {
			continue
		}
		v := values[vc.i]
		if backends.CompareDataID(id, vc.lastDue) > 0 {
			ahead[v]++
		}
		if vc.lastLate != "" && backends.CompareDataID(id, vc.lastLate) > 0 {
			aheadLate[v]++
			if sts[k] == backends.StatusReady {
				readyAheadLate[v]++
			}
		}
	}
	for _, v := range dimensionValues(vc.def, vc.i) {
		d, ok := vc.sliced(v.Value)
		if !ok {
			continue
		}
		due, err := d.Count("", vc.lastDue)
		if err != nil {
			return nil, nil // not counted by arithmetic: read
		}
		m := byValue[v.Value]
		rows := rowsIn(m)
		c := backends.ValueCount{Missing: int(max(0, due-int64(rows-ahead[v.Value])))}
		if vc.lastLate != "" {
			lateDue, err := d.Count("", vc.lastLate)
			if err != nil {
				return nil, nil
			}
			c.Late = int(max(0, lateDue-int64(m[backends.StatusReady]-readyAheadLate[v.Value])))
		}
		out[v.Value] = c
	}
	return out, nil
}

// read counts value v by reading its due dataids by key, with its oldest
// missing and late ones.
func (vc valueCounter) read(ctx context.Context, v string) (backends.ValueCount, error) {
	var c backends.ValueCount
	d, ok := vc.sliced(v)
	if !ok || vc.lastDue == "" {
		return c, nil
	}
	seq, err := d.Range("", vc.lastDue)
	if err != nil {
		return c, backends.InvalidArgument("%v", err)
	}
	batch := make([]string, 0, valueWindow)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		sts, err := vc.statuses(ctx, batch)
		if err != nil {
			return err
		}
		for k, id := range batch {
			st := sts[k]
			if st == backends.StatusNone {
				if c.Missing++; c.OldestMissing == "" {
					c.OldestMissing = id
				}
			}
			if vc.lastLate != "" && backends.CompareDataID(id, vc.lastLate) <= 0 && st != backends.StatusReady {
				if c.Late++; c.OldestLate == "" {
					c.OldestLate = id
				}
			}
		}
		batch = batch[:0]
		return nil
	}
	for id := range seq {
		if batch = append(batch, id); len(batch) == valueWindow {
			if err := flush(); err != nil {
				return c, err
			}
		}
	}
	return c, flush()
}

// statuses is the status of the producer's OUTPUT row at each dataid of
// batch (NONE without one).
func (vc valueCounter) statuses(ctx context.Context, batch []string) ([]backends.Status, error) {
	ids, sts, err := vc.e.pointStatuses(ctx, vc.dataset, vc.producer, batch)
	if err != nil {
		return nil, err
	}
	out := make([]backends.Status, len(batch))
	k := 0
	for j, id := range batch {
		out[j] = backends.StatusNone
		if k < len(ids) && ids[k] == id {
			out[j] = sts[k]
			k++
		}
	}
	return out, nil
}

// oldest finds c's oldest missing and late dataids, from its counts: it
// reads the value's due dataids by key a window at a time, from the start
// forwards (the first missing one is the oldest) and from the last due
// backwards (the oldest is in the window that brings the count seen to
// c's), in turn, until both are found.
func (vc valueCounter) oldest(ctx context.Context, c *backends.ValueCount) error {
	d, ok := vc.sliced(c.Value)
	if !ok {
		return nil
	}
	fwd, err := d.Range("", vc.lastDue)
	if err != nil {
		return err
	}
	back, err := d.RangeDown("", vc.lastDue)
	if err != nil {
		return err
	}
	nextFwd, stopFwd := iter.Pull(fwd)
	defer stopFwd()
	nextBack, stopBack := iter.Pull(back)
	defer stopBack()
	wantMissing, wantLate := c.Missing > 0, c.Late > 0
	seenMissing, seenLate := 0, 0 // from the end
	low, high := "", ""           // the dataids read from the start and from the end
	// Windows grow from a few dataids: the oldest is most often at
	// either end (a feed that never came, or one that stopped).
	window := firstValueWindow
	for wantMissing || wantLate {
		var batch []string
		for len(batch) < window {
			id, ok := nextFwd()
			if !ok || (high != "" && backends.CompareDataID(id, high) >= 0) {
				break
			}
			batch = append(batch, id)
		}
		if len(batch) > 0 {
			low = batch[len(batch)-1]
			sts, err := vc.statuses(ctx, batch)
			if err != nil {
				return err
			}
			for k, id := range batch {
				if wantMissing && sts[k] == backends.StatusNone {
					c.OldestMissing, wantMissing = id, false
				}
				if wantLate && vc.lastLate != "" && backends.CompareDataID(id, vc.lastLate) <= 0 && sts[k] != backends.StatusReady {
					c.OldestLate, wantLate = id, false
				}
			}
		}
		if !wantMissing && !wantLate {
			return nil
		}
		var down []string
		for len(down) < window {
			id, ok := nextBack()
			if !ok || (low != "" && backends.CompareDataID(id, low) <= 0) {
				break
			}
			down = append(down, id)
		}
		if len(batch) == 0 && len(down) == 0 {
			return nil // every dataid read: the counts met none left
		}
		window = min(4*window, valueWindow)
		if len(down) > 0 {
			high = down[len(down)-1]
			sts, err := vc.statuses(ctx, down)
			if err != nil {
				return err
			}
			for k, id := range down {
				if sts[k] == backends.StatusNone {
					if seenMissing++; wantMissing && seenMissing == c.Missing {
						c.OldestMissing, wantMissing = id, false
					}
				}
				if vc.lastLate != "" && backends.CompareDataID(id, vc.lastLate) <= 0 && sts[k] != backends.StatusReady {
					if seenLate++; wantLate && seenLate == c.Late {
						c.OldestLate, wantLate = id, false
					}
				}
			}
		}
	}
	return nil
}
