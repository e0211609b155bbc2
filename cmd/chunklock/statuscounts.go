package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/client"
)

// troubleLimit is how many FAILED and how many HOLD chunks `status` lists
// per dataset.
const troubleLimit = 20

// datasetCounts asks the server to count the chunks of ids. A server older
// than Dataset.chunkCounts has its rows read and counted here instead, as
// `status` did before servers counted.
func datasetCounts(ctx context.Context, c *client.Client, ids []string) ([]client.DatasetCounts, error) {
	counts, err := c.Counts(ctx, ids)
	if !errors.Is(err, client.ErrNoCounts) {
		return counts, err
	}
	counts = make([]client.DatasetCounts, 0, len(ids))
	for _, d := range ids {
		rows, err := c.Chunks(ctx, client.ChunkFilter{Dataset: d, Role: "OUTPUT"})
		if err != nil {
			return nil, err
		}
		dc := client.DatasetCounts{ID: d}
		for _, r := range rows {
			dc.Chunks.Total++
			switch r.Status {
			case "RUNNING":
				dc.Chunks.Running++
			case "READY":
				dc.Chunks.Ready++
				dc.LatestReady = &r.DataID
			case "FAILED":
				dc.Chunks.Failed++
			case "RESUBMIT":
				dc.Chunks.Resubmit++
			case "HOLD":
				dc.Chunks.Hold++
			}
		}
		counts = append(counts, dc)
	}
	return counts, nil
}

// printCounts prints the table of chunks by status, one line a dataset.
func printCounts(out io.Writer, v pipelineView, counts []client.DatasetCounts) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DATASET\tPRODUCER\tCHUNKS\t"+strings.Join(statusOrder, "\t")+"\tLAST DATAID")
	for _, dc := range counts {
		producer := "(source)"
		if p, ok := v.producer[dc.ID]; ok {
			producer = p
			if v.jobs[p].Paused {
				producer += " (paused)"
			}
		}
		n := dc.Chunks
		last := "-"
		if dc.LatestReady != nil {
			last = *dc.LatestReady
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", dc.ID, producer, n.Total, n.Ready, n.Running, n.Failed, n.Resubmit, n.Hold, last)
	}
	return tw.Flush()
}

// printSummaries prints one line per dataset of ids that has a partition
// definition: how many chunks are missing and late, and the oldest of
// each, asked one dataset at a time. A summary the server cannot give
// (it ran out of time, it is busy counting) is named on its line: the
// rest of the command goes on.
func printSummaries(ctx context.Context, out io.Writer, c *client.Client, v pipelineView, ids []string) error {
	defined := map[string]bool{}
	for _, d := range v.datasets {
		defined[d.ID] = d.Partitions != nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := false
	for _, d := range ids {
		if !defined[d] {
			continue
		}
		sums, err := c.PartitionSummaries(ctx, d)
		if err != nil && strings.Contains(err.Error(), "partitionSummary") {
			return nil // a server older than partition definitions: nothing is expected
		}
		if err != nil && ctx.Err() != nil {
			return err
		}
		if !header {
			fmt.Fprintln(out)
			fmt.Fprintln(tw, "EXPECTED\tMISSING\tLATE\tOLDEST MISSING\tOLDEST LATE")
			header = true
		}
		s, ok := sums[d]
		switch {
		case err != nil:
			fmt.Fprintf(tw, "%s\t?\t?\t\t\t(not counted: %s)\n", d, oneLine(err.Error(), 100))
			continue
		case !ok:
			continue
		}
		note := ""
		if s.Truncated {
			note = "\t(most recent 100,000 dataids counted)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s%s\n", d, s.Missing, s.Late, orDash(s.OldestMissing), orDash(s.OldestLate), note)
	}
	if !header {
		return nil
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out, "list them with `chunklock chunks --missing` or `chunklock chunks --late`")
	return printBehindValues(ctx, out, c, v, ids)
}

// behindShown is how many values behind of each dimension status names.
const behindShown = 5

// countedDimensions lists the STATIC and DYNAMIC dimensions of a dataset
// with dimensions: those counted by value.
func countedDimensions(d client.Dataset) []string {
	def := d.Backend().Partitions
	if def == nil || def.Kind != partition.Dimensional {
		return nil
	}
	var names []string
	for _, dim := range def.Dimensions {
		if dim.Kind == partition.Static || dim.Kind == partition.Dynamic {
			names = append(names, dim.Name)
		}
	}
	return names
}

// printBehindValues names, for each dataset of ids with STATIC or DYNAMIC
// dimensions, the values of each such dimension that have missing or
// late chunks: the first behindShown of them, one line a dimension.
func printBehindValues(ctx context.Context, out io.Writer, c *client.Client, v pipelineView, ids []string) error {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	header := false
	for _, d := range v.datasets {
		if !want[d.ID] {
			continue
		}
		for _, dim := range countedDimensions(d) {
			page, err := c.ValueSummaries(ctx, d.ID, dim, true, behindShown, "")
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				if strings.Contains(err.Error(), "valueSummaries") {
					return nil // a server older than counts by value
				}
				fmt.Fprintf(out, "%s by %s: not counted (%s)\n", d.ID, dim, oneLine(err.Error(), 100))
				continue
			}
			if len(page.Summaries) == 0 {
				continue
			}
			if !header {
				fmt.Fprintln(out)
				fmt.Fprintln(out, "BEHIND BY VALUE")
				header = true
			}
			var parts []string
			for _, s := range page.Summaries {
				parts = append(parts, describeBehind(s))
			}
			behind := "some"
			if page.Behind != nil {
				behind = fmt.Sprint(*page.Behind)
			}
			line := fmt.Sprintf("%s by %s: %s of %d behind: %s", d.ID, dim, behind, page.Values, strings.Join(parts, "; "))
			if page.HasNextPage {
				line += fmt.Sprintf("; more with `chunklock status --dataset %s --by %s --behind`", d.ID, dim)
			}
			fmt.Fprintln(out, line)
		}
	}
	return nil
}

// deref is *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// describeBehind says in a few words how far behind one value is.
func describeBehind(s client.ValueSummary) string {
	var what []string
	if s.Missing > 0 {
		w := fmt.Sprintf("%d missing", s.Missing)
		if s.OldestMissing != nil {
			w += " from " + *s.OldestMissing
		}
		what = append(what, w)
	}
	if s.Late > 0 {
		what = append(what, fmt.Sprintf("%d late", s.Late))
	}
	return s.Value + " (" + strings.Join(what, ", ") + ")"
}

// printValues prints every value of one dimension of a dataset with its
// missing and late chunks (only those behind, with behind), page by page.
func printValues(ctx context.Context, out io.Writer, c *client.Client, dataset, dim string, behind bool) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tMISSING\tLATE\tOLDEST MISSING\tOLDEST LATE\tEXPECTED FROM\n", strings.ToUpper(dim))
	after, listed := "", 0
	var page client.ValueSummaryPage
	for {
		var err error
		if page, err = c.ValueSummaries(ctx, dataset, dim, behind, 100, after); err != nil {
			return err
		}
		for _, s := range page.Summaries {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", s.Value, s.Missing, s.Late, orDash(deref(s.OldestMissing)), orDash(deref(s.OldestLate)), orDash(deref(s.ExpectedFrom)))
			listed++
		}
		if !page.HasNextPage || len(page.Summaries) == 0 {
			break
		}
		after = page.Summaries[len(page.Summaries)-1].Value
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case page.Behind != nil:
		fmt.Fprintf(out, "%d of %d values behind\n", *page.Behind, page.Values)
	case behind:
		fmt.Fprintf(out, "%d of %d values behind (counted by reading their chunks)\n", listed, page.Values)
	}
	return nil
}

// printTrouble lists the first troubleLimit FAILED and HOLD chunks of each
// dataset whose counts have some, with their reason; it reads no dataset
// that has none.
func printTrouble(ctx context.Context, out io.Writer, c *client.Client, counts []client.DatasetCounts) error {
	var rows []client.StatusRow
	more := false
	for _, dc := range counts {
		for _, st := range []struct {
			status string
			n      int
		}{{"FAILED", dc.Chunks.Failed}, {"HOLD", dc.Chunks.Hold}} {
			if st.n == 0 {
				continue
			}
			rs, err := c.Chunks(ctx, client.ChunkFilter{Dataset: dc.ID, Role: "OUTPUT", Status: st.status, Limit: troubleLimit})
			if err != nil {
				return err
			}
			rows = append(rows, rs...)
			more = more || st.n > len(rs)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAILED/HOLD\tDATAID\tSTATUS\tATTEMPT\tREASON")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.Dataset, r.DataID, r.Status, r.Attempt, oneLine(r.Reason, 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more {
		fmt.Fprintf(out, "(the first %d FAILED and %d HOLD chunks of each dataset; list them all with `chunklock chunks --dataset D`)\n", troubleLimit, troubleLimit)
	}
	fmt.Fprintln(out)
	var hold, failed *client.StatusRow
	for i := range rows {
		switch {
		case rows[i].Status == "HOLD" && hold == nil:
			hold = &rows[i]
		case rows[i].Status == "FAILED" && failed == nil:
			failed = &rows[i]
		}
	}
	if failed != nil {
		fmt.Fprintln(out, "FAILED chunks are claimed again by themselves, after their job's retry delay, while attempts remain.")
	}
	example := failed
	if hold != nil {
		example = hold
		fmt.Fprintf(out, "HOLD chunks wait for you: once their cause is fixed, `chunklock resubmit --dataset %s --dataid %s` (or --from/--to for a range).\n", shellWord(hold.Dataset), shellWord(hold.DataID))
	}
	fmt.Fprintf(out, "A chunk's history (why it failed, who held it): `chunklock events --dataset %s --dataid %s`.\n", shellWord(example.Dataset), shellWord(example.DataID))
	return nil
}

// shellWord is s as one word of a POSIX shell command a user may paste: as
// it is when it holds only characters no shell reads specially, else in
// single quotes (a dataid with dimensions holds '|').
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/+,@%=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
