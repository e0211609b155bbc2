package backendtest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chunklock/chunklock/backends"
)

// applyPartitions compares a dataset's partitions (SPEC §8 "Missing and
// late") with the model's: the listing of its due expected dataids with
// their status, and the missing count, which is how many of them have no
// OUTPUT row, the first of them the oldest missing.
func (h *harness) applyPartitions(dataset string) {
	h.t.Helper()
	b, m, ctx := h.b, h.m, h.b.ctx
	page, err := b.s.Partitions(ctx, backends.PartitionFilter{Dataset: dataset})
	h.code("partitions", "", err)
	var got []string
	for _, p := range page.Partitions {
		got = append(got, p.DataID+"="+string(p.Status))
	}
	want := m.partitions(dataset)
	h.equal("partitions("+dataset+")", want, got)

	missing, oldest := 0, ""
	for _, p := range want {
		if id, ok := strings.CutSuffix(p, "="+string(none)); ok {
			if missing++; oldest == "" {
				oldest = id
			}
		}
	}
	c, err := b.s.PartitionCounts(ctx, dataset)
	h.code("partitionCounts", "", err)
	h.equal("partitionCounts("+dataset+")", []any{missing, oldest, false}, []any{c.Missing, c.OldestMissing, c.Truncated})
	if modelHasDynamic(dataset) {
		h.applyValueCounts(dataset, want)
	}
}

// applyValueCounts compares the counts by customer of x or z with the
// model's listing (want: "dataid=status"), every customer of the set in
// shortlex order, missing ones and the oldest of each; nothing is late
// (the model's definitions have no deadline).
func (h *harness) applyValueCounts(dataset string, want []string) {
	h.t.Helper()
	page, err := h.b.s.ValueCounts(h.b.ctx, backends.ValueCountFilter{Dataset: dataset, Dimension: "customer", First: backends.MaxValueCountPage})
	h.code("valueCounts", "", err)
	missing, oldest := map[string]int{}, map[string]string{}
	for _, p := range want {
		id, st, _ := strings.Cut(p, "=")
		_, c, _ := strings.Cut(id, "|")
		if st == string(none) {
			if missing[c]++; oldest[c] == "" {
				oldest[c] = id
			}
		}
	}
	customers := make([]string, 0, len(h.m.members))
	for c := range h.m.members {
		customers = append(customers, c)
	}
	slices.SortFunc(customers, backends.CompareDataID)
	var wantLines, gotLines []string
	for _, c := range customers {
		wantLines = append(wantLines, fmt.Sprintf("%s %d %s", c, missing[c], oldest[c]))
	}
	for _, c := range page.Counts {
		gotLines = append(gotLines, fmt.Sprintf("%s %d %s", c.Value, c.Missing, c.OldestMissing))
		if c.Late != 0 {
			h.fatalf("valueCounts(%s): %s late %d without a deadline", dataset, c.Value, c.Late)
		}
	}
	h.equal("valueCounts("+dataset+")", wantLines, gotLines)
}

// compareChunkCounts checks every dataset's chunk counts against a
// recount of the model's rows: its producer's OUTPUT rows by status.
func (h *harness) compareChunkCounts() {
	h.t.Helper()
	m := h.m
	for _, ds := range m.datasets {
		producer := m.rowJob(ds)
		want := backends.ChunkCount{Dataset: ds}
		for k, r := range m.rows {
			if k.dataset == ds && k.role == backends.RoleOutput && k.job == producer {
				want.Add(r.status, 1)
			}
		}
		got, err := h.b.s.ChunkCounts(h.b.ctx, ds)
		h.code("chunkCounts", "", err)
		h.equal("chunkCounts("+ds+")", want, got)
	}
}
