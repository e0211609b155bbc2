package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/client"
)

// Missing and late chunks of datasets with a partition definition, in
// `status` (a summary per dataset) and `chunks --missing/--late` (a list).

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// partitionFlags are the flags of `chunks` that list expected chunks
// instead of the grid.
func partitionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "missing", Usage: "list the due chunks that do not exist yet (datasets with a partition definition only)"},
		&cli.BoolFlag{Name: "late", Usage: "list the chunks past their deadline that are not READY (datasets with a partition definition only)"},
	}
}

// listPartitions prints the missing (--missing) or late (--late) chunks of
// the selected datasets that have a partition definition; with both flags,
// the chunks that are both.
func listPartitions(ctx context.Context, cmd *cli.Command, c *client.Client, v pipelineView, ids []string) error {
	out := stdout(cmd)
	defined := map[string]bool{}
	for _, d := range v.datasets {
		defined[d.ID] = d.Partitions != nil
	}
	slice, err := sliceArgs(cmd)
	if err != nil {
		return err
	}
	f := client.PartitionFilter{From: cmd.String("from"), To: cmd.String("to"), Limit: int(cmd.Int("limit")), Slice: slice}
	what := "late"
	if cmd.Bool("missing") {
		f.Status, what = "NONE", "missing"
	}
	if cmd.Bool("late") {
		yes := true
		f.Late = &yes
		if f.Status != "" {
			what = "missing and late"
		}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DATASET\tDATAID\tSTATUS\tDUE\tLATE")
	n, listed, cut := 0, 0, false
	for _, d := range ids {
		if !defined[d] {
			continue
		}
		listed++
		f.Dataset = d
		ps, err := c.Partitions(ctx, f)
		if err != nil {
			return err
		}
		cut = cut || (f.Limit > 0 && len(ps) >= f.Limit)
		for _, p := range ps {
			due := "-"
			if p.DueAt != nil {
				due = p.DueAt.UTC().Format(time.RFC3339)
			}
			late := ""
			if p.Late {
				late = "late"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Dataset, p.DataID, p.Status, due, late)
			n++
		}
	}
	if listed == 0 {
		return fmt.Errorf("none of the selected datasets has a partition definition, so none expects chunks; add `partitions:` to the dataset in the pipeline file and run `chunklock apply`")
	}
	if n == 0 {
		fmt.Fprintf(out, "no %s chunks\n", what)
		return nil
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if cut {
		fmt.Fprintf(out, "(the first %d %s chunks per dataset; see more with --limit 0 or --from)\n", f.Limit, what)
	}
	return nil
}
