package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// DYNAMIC dimensions (SPEC §10, partition/ragged.go). The values of a
// DYNAMIC dimension of a multi-dimensional dataset are part of its
// definition: adding or removing some is a catalog change of the dataset
// (recorded as addPartitions or removePartitions, with the values, not the
// whole set), so that every claim, count and listing reads the set of the
// catalog version it decides with, on every replica, and a claim racing an
// add is ordered with it as with any definition change. A dimension holds
// at most partition.MaxDynamicDimensionValues values.
//
// Beside a time dimension an added value is expected from the window that
// holds the moment of the add (a new customer's feed starts now), or from
// the window of from when the add asks for a backfill.
//
// Values flow downstream: a job whose output has a DYNAMIC dimension of
// the same name as one of its input's, and reads that dimension by value
// (IDENTITY, the default rules, or a mapping by dimension pairing the two
// by IDENTITY), feeds its output the input's values. An add or a remove of
// an input's values makes the same change to every such output,
// transitively, in the same call (the outputs first, so that no output
// chunk of a new value is ever unexpected when its input chunk becomes
// READY), and a job declared later copies its inputs' values into its
// output and every dataset fed from it (fedSeeds), checked as an add is.

// fedOutputs lists the datasets whose DYNAMIC dimension named dim takes
// dataset's values, transitively, each after the datasets it is fed from.
func fedOutputs(cat *backends.Catalog, dataset, dim string) []string {
	var order []string
	seen := map[string]bool{dataset: true}
	queue := []string{dataset}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		for _, jid := range cat.Consumers(d) {
			j := cat.Jobs.Get(jid)
			if seen[j.Output] || !feeds(cat, j, d, dim) {
				continue
			}
			seen[j.Output] = true
			order = append(order, j.Output)
			queue = append(queue, j.Output)
		}
	}
	return order
}

// feeds tells whether job j reads dimension dim of its input in by value
// into a DYNAMIC dimension of its output of the same name.
// A mapping by dimension feeds it when it reads dim by value (an entry or
// the default rules pairing it with the output's dim by IDENTITY).
func feeds(cat *backends.Catalog, j backends.Job, in, dim string) bool {
	idef, odef := cat.DefOf(in), cat.DefOf(j.Output)
	if dynamicDim(idef, dim) < 0 || dynamicDim(odef, dim) < 0 {
		return false
	}
	switch m := j.Mapping(in); m.Kind {
	case partition.Identity, partition.AcrossDimensions:
		return true
	case partition.ByDimension:
		return m.ReadsByValue(odef, idef, dim)
	}
	return false
}

// fedFrom refuses an add to dataset's values of dim when a job's input
// feeds them (fedOutputs): they are added there, and flow down. A value of
// the output alone reads an input chunk nobody expects: its own chunks are
// never due, and a roll-up across it waits for ever. (A remove of a fed
// value is taken: an operator may keep a customer out of one output.)
func fedFrom(cat *backends.Catalog, dataset, dim string) error {
	jid := cat.Producer(dataset)
	if jid == "" {
		return nil
	}
	j := cat.Jobs.Get(jid)
	for _, in := range j.Inputs {
		if feeds(cat, j, in, dim) {
			return backends.InvalidArgument("the values of dimension %s of dataset %q come from dataset %q (job %q reads them by value): add them there", dim, dataset, in, jid)
		}
	}
	return nil
}

// dynamicDim is the place of the DYNAMIC dimension named name in def, -1
// when it has none.
func dynamicDim(def partition.Def, name string) int {
	if def.Kind != partition.Dimensional {
		return -1
	}
	for i, d := range def.Dimensions {
		if d.Name == name && d.Kind == partition.Dynamic {
			return i
		}
	}
	return -1
}

func dynamicDimNames(def partition.Def) []string {
	var names []string
	for _, d := range def.Dimensions {
		if d.Kind == partition.Dynamic {
			names = append(names, d.Name)
		}
	}
	return names
}

// sinceOf is the instant an add's values are expected from: the start of
// from's window of the time dimension, or now.
func sinceOf(def partition.Def, dataset, from string, now time.Time) (int64, error) {
	if from == "" {
		return now.Unix(), nil
	}
	if len(def.Dimensions) == 0 || !def.Dimensions[0].Kind.IsTime() {
		return 0, backends.InvalidArgument("from applies beside a time dimension; dataset %q has none: its values are expected at once", dataset)
	}
	start, _, err := def.Dimensions[0].Def.Normalized().Window(from)
	if err != nil {
		return 0, backends.InvalidArgument("from %q: %v (a dataid of the time dimension %s, %s)", from, err, def.Dimensions[0].Name, def.Dimensions[0].Kind)
	}
	return start.Unix(), nil
}

// changedDimension is dimension dim with values added (expected from
// since) or removed, what each value did (changed, or a skip), and the
// values added again after a remove (their chunks may be there).
func changedDimension(def partition.Def, dim partition.Dimension, values []string, add bool, since int64, now time.Time) (partition.Dimension, []string, []string, []backends.RangeSkip) {
	have := make(map[string]partition.Member, len(dim.Members))
	for _, m := range dim.Members {
		have[m.Value] = m
	}
	members := slices.Clone(dim.Members)
	removed := slices.Clone(dim.Removed)
	var done, again []string
	var skipped []backends.RangeSkip
	gone := map[string]bool{}
	for _, v := range values {
		m, ok := have[v]
		switch {
		case add && ok:
			reason := "already in the set, added " + time.Unix(m.Added, 0).UTC().Format(time.RFC3339)
			if from := def.ExpectedFrom(m); from != "" {
				reason += ", expected from " + from
			}
			skipped = append(skipped, backends.RangeSkip{DataID: v, Code: backends.CodeAlreadyExists, Reason: reason})
		case !add && !ok:
			skipped = append(skipped, backends.RangeSkip{DataID: v, Code: backends.CodeNotFound, Reason: "not in the set"})
		case add:
			members = append(members, partition.Member{Value: v, Since: since, Added: now.Unix()})
			done = append(done, v)
			if i := slices.Index(removed, v); i >= 0 {
				removed = slices.Delete(removed, i, i+1)
				again = append(again, v)
			}
		default:
			gone[v] = true
			done = append(done, v)
			if !slices.Contains(removed, v) {
				removed = append(removed, v)
			}
		}
	}
	if len(gone) > 0 {
		members = slices.DeleteFunc(members, func(m partition.Member) bool { return gone[m.Value] })
	}
	if n := len(removed) - partition.MaxDynamicDimensionValues; n > 0 {
		removed = removed[n:] // the most recent
	}
	if len(removed) == 0 {
		removed = nil
	}
	dim.Members, dim.Removed = members, removed
	return dim, done, again, skipped
}

// withDimension is ds with its dimension at i replaced.
func withDimension(ds backends.Dataset, i int, d partition.Dimension) backends.Dataset {
	def := *ds.Partitions
	def.Dimensions = slices.Clone(def.Dimensions)
	def.Dimensions[i] = d
	ds.Partitions = &def
	return ds
}

// changeDimensionValues is AddPartitions and RemovePartitions on a
// dataset with dimensions.
func (e *engine) changeDimensionValues(ctx context.Context, op, dataset string, values []string, dimension, from string, add bool) (backends.RangeResult, error) {
	values, repeated, err := checkValues(dataset, values, "")
	if err != nil {
		return backends.RangeResult{}, err
	}
	var res backends.RangeResult
	type change struct {
		ds    backends.Dataset
		done  []string
		cands []backends.Candidate
	}
	var changes []change // the outputs first, the dataset named last
	check := func(cat *backends.Catalog) error {
		res, changes = backends.RangeResult{}, nil
		ds, err := cat.Dataset(dataset)
		if err != nil {
			return err
		}
		if ds.Partitions == nil || ds.Partitions.Kind != partition.Dimensional {
			return backends.InvalidArgument("dataset %q has no dimensions any more: add its values without a dimension", dataset)
		}
		def := *ds.Partitions
		i := dynamicDim(def, dimension)
		if i < 0 {
			names := dynamicDimNames(def)
			switch {
			case len(names) == 0:
				return backends.InvalidArgument("dataset %q has no DYNAMIC dimension (its dimensions: %s): values are added to DYNAMIC dimensions only", dataset, strings.Join(def.DimensionNames(), ", "))
			case dimension == "":
				return backends.InvalidArgument("dataset %q has dimensions: name the DYNAMIC dimension the values are of (dimension: %s)", dataset, strings.Join(names, " or "))
			default:
				return backends.InvalidArgument("dataset %q has no DYNAMIC dimension %q (its DYNAMIC dimensions: %s)", dataset, dimension, strings.Join(names, ", "))
			}
		}
		if add {
			if err := fedFrom(cat, dataset, dimension); err != nil {
				return err
			}
		}
		now := e.clock.Now()
		since := int64(0)
		if add {
			if since, err = sinceOf(def, dataset, from, now); err != nil {
				return err
			}
		} else if from != "" {
			return backends.InvalidArgument("from applies to an add only")
		}
		targets := append(fedOutputs(cat, dataset, dimension), dataset)
		slices.Reverse(targets[:len(targets)-1]) // the outputs furthest downstream first
		// The dataset named is checked first, so that a bad value or one
		// too many is refused in its name, not in an output's it flows to.
		targets = append([]string{dataset}, targets...)
		for n, id := range targets {
			tds, _ := cat.Dataset(id)
			tdef := *tds.Partitions
			k := dynamicDim(tdef, dimension)
			s := since
			if !tdef.Windowed() {
				s = 0
			}
			changed, done, again, skipped := changedDimension(tdef, tdef.Dimensions[k], values, add, s, now)
			if id == dataset && n > 0 {
				res.Skipped = skipped
				res.Changed = len(done)
			}
			if len(done) == 0 {
				continue
			}
			flows := ""
			if id != dataset {
				flows = fmt.Sprintf(" (the values of %q flow to it)", dataset)
			}
			if n := len(changed.Members); n > partition.MaxDynamicDimensionValues {
				return backends.InvalidArgument("dimension %s of dataset %q%s holds at most %d values: it has %d, and this add would make it %d",
					dimension, id, flows, partition.MaxDynamicDimensionValues, len(tdef.Dimensions[k].Members), n)
			}
			next := withDimension(tds, k, changed)
			if err := next.Partitions.ValidateNew(); err != nil {
				return backends.InvalidArgument("dataset %q%s: %v", id, flows, err)
			}
			if n == 0 {
				continue // checked only: it is changed last, after the outputs
			}
			if err := e.checkDatasetMappings(cat, next); err != nil {
				return err
			}
			c := change{ds: next, done: done}
			if c.cands, err = e.valueCandidates(ctx, cat.WithDataset(next), next, tdef, dimension, done, again, add); err != nil {
				return err
			}
			changes = append(changes, c)
			cat = cat.WithDataset(next) // the next outputs' checks see this one's values
		}
		return nil
	}
	write := func(cat *backends.Catalog, version int64) (*backends.Catalog, int64, error) {
		for _, c := range changes {
			rec := valuesChange{Dimension: dimension, Count: len(c.done)}
			listed := c.done[:min(len(c.done), maxChangeValues)]
			if add {
				rec.Added = listed
			} else {
				rec.Removed = listed
			}
			before, _ := json.Marshal(rec)
			now := e.clock.Now()
			cctx := backends.WithChange(ctx, &backends.CatalogChange{Actor: backends.ActorFrom(ctx), Time: now, Kind: backends.ChangeDataset,
				ID: c.ds.ID, Dataset: c.ds.ID, Op: op, Before: before})
			c.ds.UpdatedAt = now
			stored, v, err := e.b.PutDataset(cctx, c.ds, c.cands, version)
			if err != nil {
				return nil, 0, err
			}
			cat, version = cat.WithDataset(stored), v
		}
		return cat, version, nil
	}
	if err := e.changeCatalog(ctx, check, write); err != nil {
		return backends.RangeResult{}, err
	}
	res.Skipped = append(res.Skipped, repeated...)
	slices.SortStableFunc(res.Skipped, func(a, b backends.RangeSkip) int { return backends.CompareDataID(a.DataID, b.DataID) })
	return res, nil
}

// valueCandidates are the candidates a change of the values of dimension
// dim of dataset ds (before: its definition until then) queues, in the
// change's own transaction: values changed may make chunks claimable that
// nothing else would queue. The job without inputs producing ds gets its
// frontier at the first tuple of the values added. Values added again
// after a remove (again) may have chunks already: the producer gets a
// sweep from their first tuple for its RESUBMIT chunks (when it has
// some), and, with inputs, one for the chunks whose inputs are READY
// already. Each job reading ds across dimensions or by dimension gets sweeps from its
// first output reading a tuple of the values removed or added again (a
// roll-up waiting for a value removed, or whose values' chunks were READY
// before).
func (e *engine) valueCandidates(ctx context.Context, cat *backends.Catalog, ds backends.Dataset, before partition.Def, dim string, changed, again []string, add bool) ([]backends.Candidate, error) {
	def := *ds.Partitions
	if !add {
		def = before // the tuples changed are those the definition had
	}
	firstOf := func(values []string) (string, bool, error) {
		if len(values) == 0 {
			return "", false, nil
		}
		sliced, ok, err := def.Sliced([]partition.Slice{{Dimension: dim, Values: values}})
		if err != nil || !ok {
			return "", false, err
		}
		id, ok := sliced.First()
		return id, ok, nil
	}
	var out []backends.Candidate
	sweep := func(job, id string, resubmit, plain bool) {
		for _, c := range []backends.Candidate{{Job: job, DataID: id, Frontier: true, Resubmit: true}, {Job: job, DataID: id, Frontier: true}} {
			if (c.Resubmit && resubmit || !c.Resubmit && plain) && !slices.Contains(out, c) {
				out = append(out, c) // once: a store writes each key once a change
			}
		}
	}
	if p := cat.Producer(ds.ID); p != "" && add {
		job := cat.Jobs.Get(p)
		if first, ok, err := firstOf(changed); err != nil {
			return nil, err
		} else if sdef := scheduleDef(cat, job); ok && len(job.Inputs) == 0 && sdef != nil {
			out = append(out, frontierAt(job, sdef, first))
		} else if ok && mayReadNothing(job) {
			// A value's first tuples may read nothing (a lookback
			// that ends before them): no input becoming READY will
			// queue them. Of a date × DYNAMIC output a chain of
			// candidates goes through them (chainMaybeEmpty, from the
			// first tuple of the values, which is one); of another
			// shape a sweep walks the outputs.
			if _, _, shaped := nextMaybeEmpty(cat, job, def, ""); shaped {
				out = append(out, chainLink(job.ID, first))
			} else {
				sweep(job.ID, first, false, true)
			}
		}
		if first, ok, err := firstOf(changed); err != nil {
			return nil, err
		} else if ok && len(job.Inputs) > 0 && !slices.ContainsFunc(job.Inputs, func(in string) bool { return feeds(cat, job, in, dim) }) {
			// Values no input feeds (a fan-out of a daily input to each
			// customer, a LATEST snapshot read by every customer): their
			// tuples may read chunks READY already, which will not queue
			// them again, so a sweep walks the outputs from the first.
			sweep(job.ID, first, false, true)
		}
		if first, ok, err := firstOf(again); err != nil {
			return nil, err
		} else if ok {
			resubmits, err := e.hasResubmits(ctx, ds.ID, cat.RowJob(job))
			if err != nil {
				return nil, err
			}
			sweep(job.ID, first, resubmits, len(job.Inputs) > 0)
		}
	}
	touched := changed
	if add {
		touched = again
	}
	first, ok, err := firstOf(touched)
	if err != nil || !ok {
		return out, err
	}
	for _, rid := range cat.Consumers(ds.ID) {
		r := cat.Jobs.Get(rid)
		m := r.Mapping(ds.ID)
		rdef := outputDef(cat, r)
		if m.Kind != partition.AcrossDimensions && m.Kind != partition.ByDimension || rdef == nil {
			continue
		}
		span, err := m.OutputSpan(*rdef, def, first)
		if err != nil {
			return nil, mappingError(r, ds.ID, first, err)
		}
		if !span.Empty && span.From != "" {
			sweep(r.ID, span.From, true, true)
		}
	}
	return out, nil
}

// mayReadNothing tells whether job, with inputs, reads every input
// through a window ending before its output (a lookback of the days
// before, EndOffset < 0), one-dimensional or an entry of a mapping by
// dimension: at its output's first windows (a one-dimensional input's
// start, a value's first tuples), its mapped sets may all be empty.
func mayReadNothing(job backends.Job) bool {
	if len(job.Inputs) == 0 {
		return false
	}
	for _, in := range job.Inputs {
		if !slices.ContainsFunc(windowEntries(job.Mapping(in)), func(x partition.Mapping) bool {
			return x.Kind == partition.TimeWindow && x.EndOffset < 0
		}) {
			return false
		}
	}
	return true
}

// windowEntries are m's entries: its own of a mapping by dimension, else
// m itself.
func windowEntries(m partition.Mapping) []partition.Mapping {
	if m.Kind == partition.ByDimension {
		return m.Entries()
	}
	return []partition.Mapping{m}
}

// startEntries are the entries through which job reads in, as emptyStops
// reads them: windowEntries, and a roll-up across dimensions as the
// window it reads on the input's time dimension (the default rules pair
// it with the output's time axis).
func startEntries(cat *backends.Catalog, job backends.Job, in string) []partition.Mapping {
	m := job.Mapping(in)
	if m.Kind == partition.AcrossDimensions {
		if idef := cat.DefOf(in); idef.Kind == partition.Dimensional && len(idef.Dimensions) > 0 && idef.Dimensions[0].Kind.IsTime() {
			return []partition.Mapping{{Kind: partition.TimeWindow, Dimension: idef.Dimensions[0].Name}}
		}
		return nil
	}
	return windowEntries(m)
}

// readsNothingFirst tells whether job's output windows may read nothing
// at its first windows, which no input chunk becoming READY would queue:
// mayReadNothing, or, of a one-dimensional output of a time kind, every
// input read through a window that does not end after its output (its
// first windows may lie before every input's start).
func readsNothingFirst(cat *backends.Catalog, job backends.Job) bool {
	if mayReadNothing(job) {
		return true
	}
	out := outputDef(cat, job)
	if out == nil || !out.Kind.IsTime() || len(job.Inputs) == 0 {
		return false
	}
	for _, in := range job.Inputs {
		if !slices.ContainsFunc(startEntries(cat, job, in), func(x partition.Mapping) bool {
			return x.Kind == partition.TimeWindow && x.EndOffset <= 0
		}) {
			return false
		}
	}
	return true
}

// hasResubmits tells whether job has RESUBMIT chunks on dataset, from
// the counts kept with the rows (true when the store keeps none).
func (e *engine) hasResubmits(ctx context.Context, dataset, job string) (bool, error) {
	sc, ok := e.b.(backends.StatusCounter)
	if !ok {
		return true, nil
	}
	counts, err := sc.CountStatuses(ctx, dataset, job)
	if err != nil {
		return false, err
	}
	return counts[backends.StatusResubmit] > 0, nil
}

// seedChange is a dataset taking the values of a job declared to feed it:
// the dataset with them, the candidates the change queues, and the change
// record of each dimension.
type seedChange struct {
	ds    backends.Dataset
	cands []backends.Candidate
	recs  []valuesChange
}

// fedSeeds are the changes a job j declared under cat makes to the values
// of DYNAMIC dimensions: its output takes, for every DYNAMIC dimension it
// reads by value from an input, the input's values it lacks, with their
// since (a job declared after values were added to its inputs reads them
// all: values are data, SPEC §10), and so does every dataset fed from the
// output, transitively, as an add would make it. Each is checked as an
// add is (at most partition.MaxDynamicDimensionValues values, and every
// job reading or writing it still able to), and they come the datasets
// furthest downstream first, each once.
func (e *engine) fedSeeds(ctx context.Context, cat *backends.Catalog, j backends.Job) ([]seedChange, error) {
	out, found := cat.Datasets.Lookup(j.Output)
	if !found || out.Partitions == nil {
		return nil, nil
	}
	var changes []seedChange
	at := map[string]int{}
	for _, name := range dynamicDimNames(*out.Partitions) {
		var add []partition.Member
		seen := map[string]bool{}
		for _, in := range j.Inputs {
			if !feeds(cat, j, in, name) {
				continue
			}
			idef := cat.DefOf(in)
			for _, m := range idef.Dimensions[dynamicDim(idef, name)].Members {
				if !seen[m.Value] {
					seen[m.Value] = true
					add = append(add, m)
				}
			}
		}
		if len(add) == 0 {
			continue
		}
		targets := append(fedOutputs(cat, j.Output, name), j.Output)
		slices.Reverse(targets[:len(targets)-1]) // the outputs furthest downstream first
		for _, id := range targets {
			tds, _ := cat.Dataset(id)
			tdef := *tds.Partitions
			k := dynamicDim(tdef, name)
			dim := tdef.Dimensions[k]
			have := make(map[string]bool, len(dim.Members))
			for _, m := range dim.Members {
				have[m.Value] = true
			}
			members, removed := slices.Clip(dim.Members), dim.Removed
			var added, again []string
			for _, m := range add {
				if have[m.Value] {
					continue
				}
				if !tdef.Windowed() {
					m.Since = 0
				}
				members = append(members, m)
				added = append(added, m.Value)
				if i := slices.Index(removed, m.Value); i >= 0 {
					removed = slices.Delete(slices.Clone(removed), i, i+1)
					again = append(again, m.Value)
				}
			}
			if len(added) == 0 {
				continue
			}
			if n := len(members); n > partition.MaxDynamicDimensionValues {
				return nil, backends.InvalidArgument("dimension %s of dataset %q would take %d values from the inputs of job %q: at most %d",
					name, id, n, j.ID, partition.MaxDynamicDimensionValues)
			}
			if len(removed) == 0 {
				removed = nil
			}
			dim.Members, dim.Removed = members, removed
			next := withDimension(tds, k, dim)
			if err := next.Partitions.ValidateNew(); err != nil {
				return nil, backends.InvalidArgument("dataset %q: %v", id, err)
			}
			if err := e.checkDatasetMappings(cat, next); err != nil {
				return nil, backends.InvalidArgument("job %q would give dataset %q the %d values of dimension %s it reads: %v", j.ID, id, len(added), name, err)
			}
			cands, err := e.valueCandidates(ctx, cat.WithDataset(next), next, tdef, name, added, again, true)
			if err != nil {
				return nil, err
			}
			rec := valuesChange{Dimension: name, Count: len(added), Added: added[:min(len(added), maxChangeValues)]}
			if i, ok := at[id]; ok {
				changes[i].ds = next
				changes[i].cands = append(changes[i].cands, cands...)
				changes[i].recs = append(changes[i].recs, rec)
			} else {
				at[id] = len(changes)
				changes = append(changes, seedChange{ds: next, cands: cands, recs: []valuesChange{rec}})
			}
			cat = cat.WithDataset(next) // the next checks see this one's values
		}
	}
	return changes, nil
}
