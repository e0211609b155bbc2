package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/client"
)

func publishCommand() *cli.Command {
	return &cli.Command{
		Name:      "publish",
		Category:  catOperator,
		Usage:     "mark chunks of a source dataset READY, so that its consumers may claim them",
		UsageText: "chunklock publish --dataset D DATAID... | --dataid D... | --range FROM..TO | --from FROM --to TO [--slice DIMENSION=V1,V2]",
		Description: "For datasets no job produces (their chunks arrive from outside): once a chunk is\n" +
			"complete where the dataset's location says, publish it. Publishing a READY chunk again\n" +
			"changes nothing. --range expands ISO dates (2026-01-01..2026-01-31), hours\n" +
			"(2026-01-01T00..2026-01-01T23) or integers (1..30, or 001..030 keeping the width)\n" +
			"here, and publishes each dataid; --from/--to\n" +
			"publishes every expected dataid of a dataset with a partition definition, on the server\n" +
			"(a chunk on HOLD is skipped).\n\n" +
			"Examples:\n" +
			"   chunklock publish --dataset orders-raw 2026-01-15\n" +
			"   chunklock publish --dataset orders-raw --range 2026-01-01..2026-01-30\n" +
			"   chunklock publish --dataset orders-raw --from 2026-01-01 --to 2026-12-31" + rangeHelp + connHelp,
		Flags: append(append(connFlags(),
			&cli.StringFlag{Name: "dataset", Required: true, Usage: "the source `dataset`"},
			&cli.StringFlag{Name: "range", Usage: "publish every dataid `FROM..TO` (dates, hours or integers)"},
			&cli.StringSliceFlag{Name: "dataid", Usage: "publish this `dataid` (repeat for several), as the other chunk commands name one; the same as naming it after the flags"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the dataids, one a line, and publish nothing (not with --from/--to)"},
		), rangeFlagList("publish")...),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			ds := cmd.String("dataset")
			from, to, isRange, err := rangeArgs(cmd, false)
			switch {
			case err != nil:
				return err
			case isRange && (cmd.Args().Len() > 0 || len(cmd.StringSlice("dataid")) > 0 || cmd.String("range") != "" || cmd.Bool("dry-run")):
				return errors.New("--from/--to publish a range on the server: give no dataids, --range or --dry-run with them")
			case isRange:
				return runRange(ctx, cmd, c, ds, from, to, "published", "READY",
					func(ctx context.Context, from, to string, slice []partition.Slice) (client.RangeResult, error) {
						if slice != nil {
							return c.SlicedRange(ctx, backends.RangeRequest{Op: backends.RangePublish, Dataset: ds, From: from, To: to, Slice: slice})
						}
						return c.PublishRange(ctx, ds, from, to)
					})
			}
			ids := append(cmd.StringSlice("dataid"), cmd.Args().Slice()...)
			if r := cmd.String("range"); r != "" {
				more, err := expandRange(r)
				if err != nil {
					return err
				}
				ids = append(ids, more...)
			}
			if len(ids) == 0 {
				return errors.New("no dataid given: `chunklock publish --dataset D DATAID...`, --range FROM..TO or --from FROM --to TO")
			}
			for _, id := range ids {
				if err := backends.ValidateDataID(id); err != nil {
					return err
				}
			}
			if cmd.Bool("dry-run") {
				fmt.Fprintln(stdout(cmd), strings.Join(ids, "\n"))
				return nil
			}
			if err := c.Publish(ctx, cmd.String("dataset"), ids); err != nil {
				return err
			}
			fmt.Fprintf(stdout(cmd), "published %d chunk(s) of %s\n", len(ids), cmd.String("dataset"))
			return nil
		}),
	}
}

// hourLayout is an HOURLY dataid's form.
const hourLayout = "2006-01-02T15"

// maxRange bounds how many dataids one --range may name.
const maxRange = 100000

// expandRange expands FROM..TO of ISO dates or integers.
func expandRange(r string) ([]string, error) {
	from, to, ok := strings.Cut(r, "..")
	if !ok {
		return nil, fmt.Errorf("--range %q: want FROM..TO, e.g. 2026-01-01..2026-01-31 or 1..30", r)
	}
	for _, k := range []struct {
		layout, what string
		next         func(time.Time) time.Time
	}{
		{time.DateOnly, "a date (YYYY-MM-DD)", func(t time.Time) time.Time { return t.AddDate(0, 0, 1) }},
		{hourLayout, "an hour (YYYY-MM-DDTHH)", func(t time.Time) time.Time { return t.Add(time.Hour) }},
	} {
		a, err := time.Parse(k.layout, from)
		if err != nil {
			continue
		}
		b, err := time.Parse(k.layout, to)
		if err != nil || b.Before(a) {
			return nil, fmt.Errorf("--range %q: TO must be %s not before FROM", r, k.what)
		}
		var out []string
		for d := a; !d.After(b); d = k.next(d) {
			if len(out) == maxRange {
				return nil, fmt.Errorf("--range %q names more than %d dataids", r, maxRange)
			}
			out = append(out, d.Format(k.layout))
		}
		return out, nil
	}
	a, errA := strconv.ParseUint(from, 10, 63)
	b, errB := strconv.ParseUint(to, 10, 63)
	if errA != nil || errB != nil || b < a {
		return nil, fmt.Errorf("--range %q: want two ISO dates, two hours (2026-01-01T00) or two non-negative integers, FROM not after TO", r)
	}
	if b-a >= maxRange {
		return nil, fmt.Errorf("--range %q names more than %d dataids", r, maxRange)
	}
	width := 0
	if len(from) > 1 && from[0] == '0' {
		width = len(from)
	}
	var out []string
	for n := a; n <= b; n++ {
		out = append(out, fmt.Sprintf("%0*d", width, n))
	}
	return out, nil
}

// chunkOrRangeFlags name one chunk (--dataset, --dataid) or a range of
// its dataset's chunks (--from/--to or --range).
func chunkOrRangeFlags(verb string) []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "dataset", Required: true, Usage: "the chunk's `dataset`"},
		&cli.StringFlag{Name: "dataid", Usage: "the chunk's `dataid` (or a range: --from/--to)"},
		&cli.StringFlag{Name: "range", Usage: "the same as --from FROM --to TO: " + verb + " every chunk in `FROM..TO`"},
	}, rangeFlagList(verb)...)
}

// chunkOrRange reads the flags of chunkOrRangeFlags: either a dataid or
// a range (isRange).
// The dataid may also be given after the flags, as publish takes them.
func chunkOrRange(cmd *cli.Command) (dataid, from, to string, isRange bool, err error) {
	from, to, isRange, err = rangeArgs(cmd, true)
	dataid = cmd.String("dataid")
	args := cmd.Args().Slice()
	switch {
	case err != nil:
		return "", "", "", false, err
	case len(args) > 1 || len(args) == 1 && (dataid != "" || isRange):
		return "", "", "", false, fmt.Errorf("one chunk at a time: give its dataid once (--dataid X or after the flags), or a range (--from/--to or --range), not %q too", strings.Join(args, " "))
	case len(args) == 1:
		dataid = args[0]
	}
	switch {
	case isRange && dataid != "":
		return "", "", "", false, errors.New("give --dataid for one chunk or --from/--to for a range, not both")
	case !isRange && dataid == "":
		return "", "", "", false, errors.New("no chunk given: --dataid X, or a range --from FROM --to TO (or --range FROM..TO)")
	}
	return dataid, from, to, isRange, nil
}

func printRows(cmd *cli.Command, rows []client.StatusRow) error {
	tw := tabwriter.NewWriter(stdout(cmd), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DATASET\tDATAID\tJOB\tSTATUS\tREASON")
	for _, r := range rows {
		job := r.Job
		if job == "" {
			job = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Dataset, r.DataID, job, r.Status, oneLine(r.Reason, 80))
	}
	return tw.Flush()
}

func resubmitCommand() *cli.Command {
	return &cli.Command{
		Name:      "resubmit",
		Category:  catOperator,
		Usage:     "ask for chunks to be produced again (with --cascade, everything computed from them too)",
		UsageText: "chunklock resubmit --dataset D (--dataid X | X | --from FROM --to TO | --range FROM..TO) [--slice DIMENSION=V1,V2] [--cascade]",
		Description: "The chunk's OUTPUT row becomes RESUBMIT (from READY, FAILED or HOLD; refused while\n" +
			"RUNNING) with its attempts reset, and its producer claims it before anything else. With\n" +
			"--cascade every chunk computed from it downstream is invalidated too, transitively, so\n" +
			"stale data is never read and everything re-runs in order. Prints the rows it changed;\n" +
			"over a range, a summary (a chunk with no row yet, or RUNNING, is skipped).\n\n" +
			"Examples:\n" +
			"   chunklock resubmit --dataset orders --dataid 2026-01-15 --cascade\n" +
			"   chunklock resubmit --dataset orders --from 2026-01-01 --to 2026-03-31 --cascade" + rangeHelp + connHelp,
		Flags: append(append(connFlags(), chunkOrRangeFlags("resubmit")...),
			&cli.BoolFlag{Name: "cascade", Usage: "invalidate every chunk computed from it downstream too"},
		),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			ds, cascade := cmd.String("dataset"), cmd.Bool("cascade")
			dataid, from, to, isRange, err := chunkOrRange(cmd)
			if err != nil {
				return err
			}
			if isRange {
				changed := 0
				err := runRange(ctx, cmd, c, ds, from, to, "resubmitted", "RESUBMIT",
					func(ctx context.Context, from, to string, slice []partition.Slice) (r client.RangeResult, err error) {
						if slice != nil {
							r, err = c.SlicedRange(ctx, backends.RangeRequest{Op: backends.RangeResubmit, Dataset: ds, From: from, To: to, Slice: slice, Cascade: cascade})
						} else {
							r, err = c.ResubmitRange(ctx, ds, from, to, cascade)
						}
						changed += r.Changed
						return r, err
					})
				if err == nil && cascade && changed > 0 {
					// A range's answer counts its own chunks only.
					fmt.Fprintln(stdout(cmd), "what was computed from them is RESUBMIT too, downstream: `chunklock status` counts it by dataset")
				}
				return err
			}
			rows, err := c.Resubmit(ctx, ds, dataid, cascade)
			if err != nil {
				return err
			}
			return printRows(cmd, rows)
		}),
	}
}

func holdCommand() *cli.Command {
	return &cli.Command{
		Name:      "hold",
		Category:  catOperator,
		Usage:     "freeze chunks: nobody reads or writes them until they are resubmitted",
		UsageText: "chunklock hold --dataset D (--dataid X | X | --from FROM --to TO | --range FROM..TO) [--slice DIMENSION=V1,V2] [--reason TEXT]",
		Description: "The chunk's OUTPUT row becomes HOLD (refused while RUNNING): its producer will not\n" +
			"claim it and its consumers will not read it. `chunklock resubmit` thaws it. Over a\n" +
			"range, a RUNNING chunk is skipped, and a chunk already on HOLD for the same reason is\n" +
			"left as it is.\n\n" +
			"Examples:\n" +
			"   chunklock hold --dataset orders --dataid 2026-01-15 --reason \"bad export, see INC-42\"\n" +
			"   chunklock hold --dataset orders --range 2026-02-01..2026-02-28 --reason INC-43" + rangeHelp + connHelp,
		Flags: append(append(connFlags(), chunkOrRangeFlags("hold")...),
			&cli.StringFlag{Name: "reason", Usage: "why (`text` kept with the chunk)"},
		),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			ds, reason := cmd.String("dataset"), cmd.String("reason")
			dataid, from, to, isRange, err := chunkOrRange(cmd)
			if err != nil {
				return err
			}
			if isRange {
				return runRange(ctx, cmd, c, ds, from, to, "held", "on HOLD",
					func(ctx context.Context, from, to string, slice []partition.Slice) (client.RangeResult, error) {
						if slice != nil {
							return c.SlicedRange(ctx, backends.RangeRequest{Op: backends.RangeHold, Dataset: ds, From: from, To: to, Slice: slice, Reason: reason})
						}
						return c.HoldRange(ctx, ds, from, to, reason)
					})
			}
			row, err := c.Hold(ctx, ds, dataid, reason)
			if err != nil {
				return err
			}
			return printRows(cmd, []client.StatusRow{row})
		}),
	}
}

func forceCommand() *cli.Command {
	return &cli.Command{
		Name:      "force",
		Category:  catOperator,
		Usage:     "claim a chunk for a job whatever its inputs and locks (an operator's override)",
		UsageText: "chunklock force --job J --dataid X [--executor NAME] [--format json|env]",
		Description: "Claims the job's output chunk at the dataid regardless of input readiness and of the\n" +
			"job's own read locks. A live claim on that chunk is superseded: its token goes stale,\n" +
			"and a `chunklock run` holding it stops its job process at its next heartbeat without\n" +
			"writing anything. Prints the new claim like `next`; finish it with `complete`, `fail`\n" +
			"or `release`. A claim whose job env names a variable the runner refuses is failed\n" +
			"with the reason and not printed, as by `next` (see `chunklock next --help`).\n\n" +
			"Example:\n" +
			"   eval \"$(chunklock force --job report --dataid 2026-01-15 --format env)\"" + connHelp,
		Flags: append(append(connFlags(), jobKeyFlags()...),
			&cli.StringFlag{Name: "job", Required: true, Usage: "the `job`"},
			&cli.StringFlag{Name: "dataid", Required: true, Usage: "the `dataid`"},
			&cli.StringFlag{Name: "executor", DefaultText: "host-pid-random", Usage: "the `name` operators see as the claim's holder"},
			&cli.StringFlag{Name: "format", Value: "json", Usage: "`json` (one document) or env (export lines)"},
			envAllowFlag(runnerEnvAllowUsage),
		),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			format := cmd.String("format")
			if format != "json" && format != "env" {
				return fmt.Errorf("--format %q: want json or env", format)
			}
			allow, err := envAllow(cmd)
			if err != nil {
				return err
			}
			executor := cmd.String("executor")
			if executor == "" {
				executor = defaultExecutor()
			}
			key, err := jobKeyFor(cmd, cmd.String("job"), false)
			if err != nil {
				return err
			}
			if c, err = newClient(cmd, key); err != nil {
				return err
			}
			claim, err := c.Force(ctx, cmd.String("job"), cmd.String("dataid"), executor)
			if err != nil {
				return err
			}
			return deliverClaim(ctx, cmd, c, *claim, format, allow)
		}),
	}
}

func blockersCommand() *cli.Command {
	return &cli.Command{
		Name:      "blockers",
		Category:  catView,
		Usage:     "tell why a job cannot claim a dataid now",
		UsageText: "chunklock blockers --job J --dataid X",
		Description: "Lists what blocks the claim: an input chunk that is not READY, an output chunk that is\n" +
			"not free for producers, the job's own read lock on an input it consumed already, a\n" +
			"paused job, a window that is not due yet (NOT_DUE), a failed chunk backing off\n" +
			"(BACKOFF), or a job at its concurrency limit (CONCURRENCY). Nothing listed: the job\n" +
			"can claim the dataid now.\n\n" +
			"Example:\n" +
			"   chunklock blockers --job report --dataid 2026-01-15" + connHelp,
		Flags: append(connFlags(),
			&cli.StringFlag{Name: "job", Required: true, Usage: "the `job`"},
			&cli.StringFlag{Name: "dataid", Required: true, Usage: "the `dataid`"},
		),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			bs, err := c.Blockers(ctx, cmd.String("job"), cmd.String("dataid"))
			if err != nil {
				return err
			}
			out := stdout(cmd)
			if len(bs) == 0 {
				fmt.Fprintf(out, "nothing blocks job %s at %s: it can claim it now\n", cmd.String("job"), cmd.String("dataid"))
				return nil
			}
			defs := map[string]*partition.Def{} // read once a dataset (a roll-up lists many chunks of one)
			for _, b := range bs {
				line := describeBlocker(b)
				if b.Kind == "INPUT_NOT_READY" {
					def, ok := defs[b.Dataset]
					if !ok {
						def, _ = c.DatasetPartitions(ctx, b.Dataset) // none on an error: no remark
						defs[b.Dataset] = def
					}
					if why := notExpected(def, b.Dataset, b.DataID); why != "" {
						line += " (" + why + ": no such chunk can exist)"
					}
				}
				fmt.Fprintln(out, line)
			}
			return nil
		}),
	}
}

// untilText is " until <time> (in <duration>)" for a known time, else "".
func untilText(until *time.Time) string {
	if until == nil {
		return ""
	}
	in := time.Until(*until).Round(time.Second)
	if in <= 0 {
		return " until " + until.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf(" until %s (in %s)", until.UTC().Format(time.RFC3339), in)
}

// describeBlocker says in words what a blocker means.
func describeBlocker(b client.Blocker) string {
	chunk := b.Dataset + " " + b.DataID
	switch b.Kind {
	case "INPUT_NOT_READY":
		return fmt.Sprintf("INPUT_NOT_READY  input chunk %s is %s, not READY", chunk, b.Status)
	case "OUTPUT_LOCKED":
		return fmt.Sprintf("OUTPUT_LOCKED    output chunk %s is %s (producers may write only a chunk with no row, FAILED or RESUBMIT)", chunk, b.Status)
	case "LOCAL_READ":
		return fmt.Sprintf("LOCAL_READ       job %s already consumed input chunk %s (%s); resubmit that chunk to run on it again", b.Job, chunk, b.Status)
	case "PAUSED":
		return fmt.Sprintf("PAUSED           job %s is paused", b.Job)
	case "NO_INPUTS":
		return fmt.Sprintf("NO_INPUTS        job %s has no inputs and its output no schedule: claim its new chunks by dataid (`chunklock next --dataid`), or give the output a partition definition", b.Job)
	case "NOT_DUE":
		if b.Until == nil || b.Until.IsZero() {
			return fmt.Sprintf("NOT_DUE          output chunk %s is not expected yet: a value of a DYNAMIC set or dimension it needs is not there (not added, or removed)", chunk)
		}
		return fmt.Sprintf("NOT_DUE          output chunk %s is not due%s: the job claims it on its schedule", chunk, untilText(b.Until))
	case "BACKOFF":
		return fmt.Sprintf("BACKOFF          output chunk %s failed and backs off%s before it is retried (resubmit it to retry now)", chunk, untilText(b.Until))
	case "CONCURRENCY":
		if b.Pool != nil {
			return fmt.Sprintf("CONCURRENCY      pool %s of job %s has no free slot: live claims hold all its slots (`chunklock pools`); a slot frees when a claim ends or its lease passes", *b.Pool, b.Job)
		}
		return fmt.Sprintf("CONCURRENCY      job %s is at its maxConcurrent live claims (`chunklock status`); a slot frees when a claim ends or its lease passes", b.Job)
	}
	return fmt.Sprintf("%-16s %s %s %s", b.Kind, chunk, b.Job, b.Status)
}

// unexpectedDataID says, when dataset has a partition definition that does
// not expect dataid, that it does not; "" otherwise (and when the
// definition cannot be read: the caller goes on without the remark).
func unexpectedDataID(ctx context.Context, c *client.Client, dataset, dataid string) string {
	def, err := c.DatasetPartitions(ctx, dataset)
	if err != nil {
		return ""
	}
	return notExpected(def, dataset, dataid)
}

// notExpected says that def (dataset's definition, nil for none) does not
// expect dataid; "" when it does.
func notExpected(def *partition.Def, dataset, dataid string) string {
	if def == nil || def.Contains(dataid) {
		return ""
	}
	return fmt.Sprintf("%q is not an expected dataid of %s (partitions %s)", dataid, dataset, def.Describe())
}
