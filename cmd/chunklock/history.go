package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/client"
)

// chunklock history: the catalog's changes (SPEC §11), newest first.

// historyBefore is how much of a change's value before the table shows.
const historyBefore = 60

func historyCommand() *cli.Command {
	return &cli.Command{
		Name:      "history",
		Category:  catView,
		Usage:     "who changed which dataset, job, pool or credential, when, and what it was before",
		UsageText: "chunklock history [--dataset D] [--job J] [--actor A] [--limit N]",
		Description: "Lists the catalog's changes newest first: upserts, deletions, pauses and resumptions\n" +
			"of datasets, jobs and pools, and credentials set, each with the actor (the token's\n" +
			"name), the time, the operation and the object's value before (\"(created)\" when the\n" +
			"change created it; cut to " + fmt.Sprint(historyBefore) + " characters, read it whole with the catalogChanges\n" +
			"query). A credential's change names its job and dataset only, never the secret. An\n" +
			"addPartitions or removePartitions shows the values it added or removed instead.\n" +
			"--job and --dataset also select the changes of that job's or dataset's credentials.\n\n" +
			"Examples:\n" +
			"   chunklock history --job transform\n" +
			"   chunklock history --actor alice --limit 10" + connHelp,
		Flags: append(connFlags(),
			&cli.StringFlag{Name: "dataset", Usage: "only the changes of this dataset (and its credentials)"},
			&cli.StringFlag{Name: "job", Usage: "only the changes of this job (and its credentials)"},
			&cli.StringFlag{Name: "actor", Usage: "only the changes made by this actor (a token's name)"},
			&cli.IntFlag{Name: "limit", Value: 50, Usage: "show at most this many changes, the newest"},
		),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			if cmd.Args().Len() != 0 {
				return fmt.Errorf("usage: chunklock history [--dataset D] [--job J] [--actor A] [--limit N]")
			}
			limit := int(cmd.Int("limit"))
			if limit < 1 {
				return fmt.Errorf("--limit must be at least 1, got %d", limit)
			}
			f := client.ChangeFilter{Dataset: cmd.String("dataset"), Job: cmd.String("job"), Actor: cmd.String("actor")}
			var all []client.CatalogChange
			after := ""
			for len(all) < limit {
				page, next, err := c.CatalogChanges(ctx, f, after, min(limit-len(all), 1000))
				if err != nil {
					return err
				}
				all = append(all, page...)
				if next == "" {
					break
				}
				after = next
			}
			return printHistory(cmd, all)
		}),
	}
}

func printHistory(cmd *cli.Command, changes []client.CatalogChange) error {
	if len(changes) == 0 {
		_, err := fmt.Fprintln(stdout(cmd), "no catalog changes")
		return err
	}
	tw := tabwriter.NewWriter(stdout(cmd), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tACTOR\tOPERATION\tOBJECT\tBEFORE")
	for _, ch := range changes {
		before := ch.Before
		switch {
		case ch.Op == "addPartitions" || ch.Op == "removePartitions":
			before = valuesChanged(before)
		case before == "":
			before = "(created)"
		case len([]rune(before)) > historyBefore:
			before = string([]rune(before)[:historyBefore-3]) + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s\n", ch.Time.UTC().Format(time.RFC3339), ch.Actor, ch.Op, ch.Kind, ch.ID, before)
	}
	return tw.Flush()
}

// valuesChanged spells the record of an addPartitions or removePartitions,
// which holds the change itself, not the set before it: "added 3 values
// (a, b, c)", "removed 1 value of customer (acme)"; the first values only,
// as the record keeps them.
func valuesChanged(record string) string {
	var v struct {
		Dimension string   `json:"dimension"`
		Added     []string `json:"added"`
		Removed   []string `json:"removed"`
		Count     int      `json:"count"`
	}
	if err := json.Unmarshal([]byte(record), &v); err != nil {
		return record
	}
	verb, vals := "added", v.Added
	if len(v.Removed) > 0 {
		verb, vals = "removed", v.Removed
	}
	noun := "values"
	if v.Count == 1 {
		noun = "value"
	}
	out := fmt.Sprintf("%s %d %s", verb, v.Count, noun)
	if v.Dimension != "" {
		out += " of " + v.Dimension
	}
	if len(vals) > 0 {
		list := strings.Join(vals, ", ")
		if v.Count > len(vals) {
			list += ", ..."
		}
		out += " (" + list + ")"
	}
	if r := []rune(out); len(r) > historyBefore {
		out = string(r[:historyBefore-4]) + "...)"
	}
	return out
}
