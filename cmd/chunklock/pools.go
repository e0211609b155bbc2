package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/client"
)

func poolsCommand() *cli.Command {
	return &cli.Command{
		Name:      "pools",
		Category:  catView,
		Usage:     "list the pools with their slots in use",
		UsageText: "chunklock pools [--pool P]",
		Description: "A pool is a named set of slots shared by the jobs naming it (`pool:` in a job): a live\n" +
			"claim of such a job holds one slot, and no claim is made while all are held\n" +
			"(`chunklock blockers` then says CONCURRENCY). USED counts the live claims now; it may\n" +
			"exceed SLOTS after slots were lowered, until enough claims end. Pools are defined under\n" +
			"`pools:` in a pipeline file (`chunklock apply`).\n\n" +
			"Example:\n" +
			"   chunklock pools\n" +
			"   chunklock pools --pool warehouse" + connHelp,
		Flags: append(connFlags(),
			&cli.StringFlag{Name: "pool", Usage: "show only the pool `P`"},
		),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			var ps []client.Pool
			if id := cmd.String("pool"); id != "" {
				p, err := c.Pool(ctx, id)
				if err != nil {
					return err
				}
				ps = []client.Pool{p}
			} else {
				var err error
				if ps, err = c.Pools(ctx); err != nil {
					return err
				}
			}
			out := stdout(cmd)
			if len(ps) == 0 {
				fmt.Fprintln(out, "no pools; define them under `pools:` in a pipeline file and run `chunklock apply`")
				return nil
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "POOL\tUSED/SLOTS\tJOBS\tDESCRIPTION")
			for _, p := range ps {
				jobs := make([]string, len(p.Jobs))
				for i, j := range p.Jobs {
					jobs[i] = j.ID
				}
				list := strings.Join(jobs, ",")
				if list == "" {
					list = "-"
				}
				fmt.Fprintf(w, "%s\t%d/%d\t%s\t%s\n", p.ID, p.Used, p.Slots, list, p.Description)
			}
			return w.Flush()
		}),
	}
}
