package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
)

// `chunklock partitions add|remove`: the values of a dataset with DYNAMIC
// partitions (SPEC §10), given as arguments and/or read from a file, sent
// in calls of at most client.MaxPartitionValues.

const dynamicHelp = "A dataset whose partitions are DYNAMIC (`partitions: {kind: DYNAMIC}` in a pipeline file),\n" +
	"or which has a DYNAMIC dimension (--dimension: `{name: customer, kind: DYNAMIC}` among its\n" +
	"dimensions), expects the values added here: a file that landed, a customer, a station. Each value is\n" +
	"a dataid (1-128 characters of A-Z a-z 0-9 . _ : = + -). An added value is due at once (or\n" +
	"after the definition's lagSeconds), late when not READY after deadlineSeconds, and the\n" +
	"job without inputs that writes the dataset claims it once (`chunklock run`). A value\n" +
	"already there is skipped, so a sensor may add what it sees again and again. Removing a\n" +
	"value stops expecting it; its chunk stays (`chunklock chunks`). `chunklock apply` never\n" +
	"removes values.\n\n" +
	"Beside a time dimension a value added to a DYNAMIC dimension is expected from the window of\n" +
	"now in every tuple it is part of (a new customer's feed starts today), or from --from DATAID\n" +
	"(a backfill: its tuples from that dataid of the time dimension on). The outputs of jobs reading\n" +
	"the dataset by that dimension (a DYNAMIC dimension of the same name) take the values too.\n" +
	"A dimension holds at most 10,000 values.\n\n" +
	"Values come from the arguments and from --from-file (one a line; blank lines and lines\n" +
	"starting with # are skipped; - reads standard input), sent in calls of 10,000."

func partitionsCommand() *cli.Command {
	flags := func() []cli.Flag {
		return append(connFlags(),
			&cli.StringFlag{Name: "dimension", Usage: "the DYNAMIC dimension `D` of a multi-dimensional dataset (omit for a one-dimensional one)"},
			&cli.StringFlag{Name: "from-file", TakesFile: true, Usage: "read more values from `F`, one a line (- for standard input)"},
		)
	}
	return &cli.Command{
		Name:      "partitions",
		Category:  catOperator,
		Usage:     "add or remove the values of a dataset with DYNAMIC partitions",
		UsageText: "chunklock partitions add|remove DATASET [DATAID...] [--dimension D] [--from-file F]",
		Description: dynamicHelp + "\n\nExamples:\n" +
			"   chunklock partitions add landing 2026-11-22.sales.csv\n" +
			"   chunklock partitions remove customers acme" + connHelp,
		Commands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "add values to a DYNAMIC dataset (existing ones are skipped)",
				UsageText: "chunklock partitions add DATASET [DATAID...] [--dimension D] [--from-file F]",
				Description: dynamicHelp + "\n\nExamples:\n" +
					"   chunklock partitions add landing 2026-11-22.sales.csv 2026-11-22.stock.csv\n" +
					"   ls /incoming | chunklock partitions add landing --from-file -\n" +
					"   chunklock partitions add customers --from-file new-customers.txt\n" +
					"   chunklock partitions add sales acme --dimension customer\n" +
					"   chunklock partitions add sales acme --dimension customer --from 2026-01-01" + connHelp,
				Flags: append(flags(), &cli.StringFlag{Name: "from", Usage: "with --dimension beside a time dimension: expect the values from dataid `D` of the time dimension on (a backfill; default: from now)"}),
				Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
					add := func(ctx context.Context, dataset string, ids []string, dimension string) (client.RangeResult, error) {
						return c.AddPartitionsFrom(ctx, dataset, ids, dimension, cmd.String("from"))
					}
					added := 0
					counted := func(ctx context.Context, dataset string, ids []string, dimension string) (client.RangeResult, error) {
						r, err := add(ctx, dataset, ids, dimension)
						added += r.Changed
						return r, err
					}
					if err := changeValues(ctx, cmd, "added", "in the set already", counted); err != nil || added == 0 {
						return err
					}
					return sayClampedFrom(ctx, cmd, c)
				}),
			},
			{
				Name:      "remove",
				Usage:     "remove values from a DYNAMIC dataset (their chunks stay)",
				UsageText: "chunklock partitions remove DATASET [DATAID...] [--dimension D] [--from-file F]",
				Description: dynamicHelp + "\n\nExamples:\n" +
					"   chunklock partitions remove customers acme\n" +
					"   chunklock partitions remove landing --from-file retired.txt" + connHelp,
				Flags: flags(),
				Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
					return changeValues(ctx, cmd, "removed", "not in the set", c.RemovePartitions)
				}),
			},
		},
	}
}

// changeValues reads the command's values and sends them to call, a call
// per client.MaxPartitionValues, printing what was done.
func changeValues(ctx context.Context, cmd *cli.Command, past, skippedAs string,
	call func(ctx context.Context, dataset string, ids []string, dimension string) (client.RangeResult, error)) error {
	args := cmd.Args().Slice()
	if len(args) == 0 {
		return errors.New("no dataset given: chunklock partitions " + cmd.Name + " DATASET [DATAID...] [--from-file F]")
	}
	dataset, ids := args[0], args[1:]
	if f := cmd.String("from-file"); f != "" {
		more, err := readValues(cmd, f)
		if err != nil {
			return err
		}
		ids = append(ids, more...)
	}
	if len(ids) == 0 {
		return errors.New("no values given: name them after the dataset, or give --from-file")
	}
	for _, id := range ids {
		if err := backends.ValidateDataID(id); err != nil {
			return fmt.Errorf("value %q (nothing was sent: fix it or leave it out): %w", id, err)
		}
	}
	var total client.RangeResult
	calls := (len(ids) + client.MaxPartitionValues - 1) / client.MaxPartitionValues
	for i := 0; i < len(ids); i += client.MaxPartitionValues {
		batch := ids[i:min(i+client.MaxPartitionValues, len(ids))]
		r, err := call(ctx, dataset, batch, cmd.String("dimension"))
		if err != nil {
			if i > 0 {
				fmt.Fprintf(stdout(cmd), "%s %d value(s) of %s before the error; run the same command again to finish\n", past, total.Changed, dataset)
			}
			return err
		}
		total.Changed += r.Changed
		total.Skipped = append(total.Skipped, r.Skipped...)
		if calls > 1 {
			fmt.Fprintf(stderr(cmd), "%s: %d of %d calls done: %d %s, %d skipped\n", dataset, i/client.MaxPartitionValues+1, calls, total.Changed, past, len(total.Skipped))
		}
	}
	out := stdout(cmd)
	fmt.Fprintf(out, "%s %d value(s) of %s", past, total.Changed, dataset)
	if len(total.Skipped) == 0 {
		fmt.Fprintln(out)
		return nil
	}
	fmt.Fprintf(out, "; %d skipped (%s or listed twice): %s\n", len(total.Skipped), skippedAs, examples(total.Skipped))
	if cmd.String("from") != "" {
		fmt.Fprintln(out, "a value in the set already keeps the start it was added with: to backfill it from --from, remove it and add it again (its chunks stay)")
	}
	return nil
}

// examples lists the first few skipped values.
func examples(skipped []client.RangeSkip) string {
	const few = 5
	var ids []string
	for _, s := range skipped[:min(few, len(skipped))] {
		ids = append(ids, s.DataID)
	}
	s := strings.Join(ids, ", ")
	if len(skipped) > few {
		s += fmt.Sprintf(" and %d more", len(skipped)-few)
	}
	return s
}

// readValues reads values one a line from file (- for standard input),
// skipping blank lines and # comments.
func readValues(cmd *cli.Command, file string) ([]string, error) {
	var r io.Reader
	if file == "-" {
		r = cmd.Root().Reader
		if r == nil {
			r = os.Stdin
		}
	} else {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var ids []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ids = append(ids, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return ids, nil
}

// sayClampedFrom tells, after an add with --from, when --from lies before
// the start of the dataset's time dimension: the values are expected from
// that start, as nothing before it is.
func sayClampedFrom(ctx context.Context, cmd *cli.Command, c *client.Client) error {
	from := cmd.String("from")
	if from == "" || cmd.Args().Len() == 0 {
		return nil
	}
	def, err := c.DatasetPartitions(ctx, cmd.Args().First())
	if err != nil || def == nil || len(def.Dimensions) == 0 {
		return nil // the add is done: this is only a remark
	}
	t := def.Dimensions[0]
	if !t.Kind.IsTime() || t.Start == "" {
		return nil
	}
	norm := t.Def.Normalized()
	fromAt, _, err1 := norm.Window(from)
	startAt, _, err2 := norm.Window(t.Start)
	if err1 == nil && err2 == nil && fromAt.Before(startAt) {
		fmt.Fprintf(stdout(cmd), "expected from %s, the start of dimension %s: --from %s is before it, and nothing before the start is expected\n", t.Start, t.Name, from)
	}
	return nil
}
