package backends

import "iter"

// expectedDataIDs yields the expected dataids of ds in [from, to], and
// tells whether ds has a partition definition.
func expectedDataIDs(ds Dataset, from, to string) (iter.Seq[string], bool, error) {
	return nil, false, nil
}
