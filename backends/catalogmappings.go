package backends

import (
	"errors"
	"slices"

	"github.com/chunklock/chunklock/backends/partition"
)

// DefOf is the partition definition of dataset; the zero Def when it has
// none.
func (c *Catalog) DefOf(dataset string) partition.Def {
	if d, ok := c.Datasets.Lookup(dataset); ok && d.Partitions != nil {
		return *d.Partitions
	}
	return partition.Def{}
}

// validMappings checks j's InputMappings against the definitions of its
// datasets in cat and returns them in Inputs order, each with its kind
// spelled out.
func (c *Catalog) validMappings(j Job) ([]InputMapping, error) {
	if len(j.InputMappings) == 0 {
		return []InputMapping{}, nil
	}
	byInput := map[string]InputMapping{}
	for _, m := range j.InputMappings {
		if !containsString(j.Inputs, m.Dataset) {
			return nil, InvalidArgument("job %q: inputMappings names dataset %q, which is not one of its inputs", j.ID, m.Dataset)
		}
		if _, dup := byInput[m.Dataset]; dup {
			return nil, InvalidArgument("job %q: inputMappings names input %q twice", j.ID, m.Dataset)
		}
		if m.Kind == "" {
			m.Kind = partition.Identity
		}
		if err := c.checkMapping(j.Output, m); err != nil {
			return nil, InvalidArgument("job %q: input %q: %s", j.ID, m.Dataset, err.Error())
		}
		byInput[m.Dataset] = m
	}
	return NormalizedMappings(j.Inputs, j.InputMappings), nil
}

// checkMapping checks one mapping from output to m.Dataset against the
// datasets' definitions in c.
func (c *Catalog) checkMapping(output string, m InputMapping) error {
	if m.Kind == partition.Latest && c.DefOf(m.Dataset).IsZero() {
		return InvalidArgument("LATEST reads the newest READY dataid among those the input's partition definition expects, "+
			"and input %q has no partition definition", m.Dataset)
	}
	err := m.Mapping.Validate(c.DefOf(output), c.DefOf(m.Dataset))
	if err != nil && !errors.Is(err, partition.ErrInvalid) {
		return InvalidArgument("%s", err.Error())
	}
	return err
}

// CheckMappingsOf checks, for a dataset about to take definition d, the
// mappings of the jobs that write or read it: a definition that would leave
// a mapping meaningless (a TIME_WINDOW over a dataset without a time
// definition) is refused.
func (c *Catalog) CheckMappingsOf(d Dataset) error {
	next := c.WithDataset(d)
	check := func(jid string) error {
		j, ok := next.Jobs.Lookup(jid)
		if !ok {
			return nil
		}
		for _, m := range j.InputMappings {
			if m.Dataset != d.ID && j.Output != d.ID {
				continue
			}
			if err := next.checkMapping(j.Output, m); err != nil {
				return InvalidArgument("dataset %q: this definition breaks the mapping of job %q on input %q: %s", d.ID, jid, m.Dataset, err.Error())
			}
		}
		return nil
	}
	if p := c.Producer(d.ID); p != "" {
		if err := check(p); err != nil {
			return err
		}
	}
	for _, jid := range c.Consumers(d.ID) {
		if err := check(jid); err != nil {
			return err
		}
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// NormalizedMappings is ms as stores keep it: in the order of inputs (a
// mapping of a dataset not among them last, as given), each kind spelled
// out (IDENTITY for an empty one), and never nil.
func NormalizedMappings(inputs []string, ms []InputMapping) []InputMapping {
	out := make([]InputMapping, 0, len(ms))
	for _, in := range inputs {
		for _, m := range ms {
			if m.Dataset == in {
				out = append(out, m)
			}
		}
	}
	for _, m := range ms {
		if !containsString(inputs, m.Dataset) {
			out = append(out, m)
		}
	}
	for i := range out {
		if out[i].Kind == "" {
			out[i].Kind = partition.Identity
		}
	}
	return out
}

// IdentityReads is what a claim of a job without mappings reads at dataid:
// each input's chunk of the same dataid.
func IdentityReads(job Job, dataid string) []Read {
	reads := make([]Read, len(job.Inputs))
	for i, in := range job.Inputs {
		reads[i] = Read{Dataset: in, DataID: dataid}
	}
	return reads
}

// SortedReads lists the rows of byKey (nil: none) in shortlex ReadFor
// order.
func SortedReads(byKey map[RowKey]*StatusRow) []StatusRow {
	out := make([]StatusRow, 0, len(byKey))
	for _, r := range byKey {
		if r != nil {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b StatusRow) int { return CompareDataID(a.ReadFor, b.ReadFor) })
	return out
}
