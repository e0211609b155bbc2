package backends

import (
	"errors"

	"github.com/chunklock/chunklock/backends/partition"
)

// Partition mappings (SPEC §9): which input dataids an output dataid reads.
// The arithmetic lives in backends/partition; this file ties it to the
// catalog.

// defOf is the partition definition of dataset in cat; the zero Def when
// it has none.
func defOf(cat *Catalog, dataset string) partition.Def {
	if d, ok := cat.Datasets.Lookup(dataset); ok && d.Partitions != nil {
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
	err := m.Mapping.Validate(defOf(c, output), defOf(c, m.Dataset))
	if err != nil && !errors.Is(err, partition.ErrInvalid) {
		return InvalidArgument("%s", err.Error())
	}
	return err
}

// checkMappingsOf checks, for a dataset about to take definition d, the
// mappings of the jobs that write or read it: a definition that would leave
// a mapping meaningless (a TIME_WINDOW over a dataset without a time
// definition) is refused.
func (c *Catalog) checkMappingsOf(d Dataset) error {
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
