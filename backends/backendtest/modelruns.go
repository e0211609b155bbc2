package backendtest

import (
	"fmt"
	"strings"

	"github.com/chunklock/chunklock/backends"
)

// The reference model's reading of PartitionRuns: the partitions it lists
// (model.partitions, "dataid=STATUS"), with consecutive ones of one status
// taken together. The model's definitions have no deadline: nothing is
// late.
func modelRuns(partitions []string) []string {
	var out []string
	var from, to, status string
	n := 0
	flush := func() {
		if n > 0 {
			out = append(out, fmt.Sprintf("%s..%s=%s×%d", from, to, status, n))
		}
	}
	for _, p := range partitions {
		id, st, _ := strings.Cut(p, "=")
		if n > 0 && st == status {
			to, n = id, n+1
			continue
		}
		flush()
		from, to, status, n = id, id, st, 1
	}
	flush()
	return out
}

// checkRuns compares the store's runs of a dataset with the model's.
func (h *harness) checkRuns(dataset string) {
	h.t.Helper()
	span, err := h.b.s.PartitionRuns(h.b.ctx, backends.RunsFilter{Dataset: dataset, Runs: true})
	h.code("partitionRuns", "", err)
	var got []string
	for _, r := range span.Runs {
		if r.Late {
			h.fatalf("partitionRuns(%s): run %+v is late, and the model's definitions have no deadline", dataset, r)
		}
		got = append(got, fmt.Sprintf("%s..%s=%s×%d", r.From, r.To, r.Status, r.Count))
	}
	h.equal("partitionRuns("+dataset+")", modelRuns(h.m.partitions(dataset)), got)
}
