package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/client"
)

func eventsCommand() *cli.Command {
	return &cli.Command{
		Name:      "events",
		Category:  catView,
		Usage:     "print the log of status transitions; --follow prints new ones as they happen",
		UsageText: "chunklock events [--dataset D] [--job J] [--dataid X] [--last N] [--follow] [--format text|json]",
		Description: "Every transition of every status row: when, who (token name, `reaper` for an expired\n" +
			"lease), which row, from which status to which, the attempt, the executor and the reason.\n" +
			"--format json prints one JSON object per line, for jq.\n\n" +
			"Examples:\n" +
			"   chunklock events --dataset orders --dataid 2026-01-15\n" +
			"   chunklock events --job transform --follow --last 0" + connHelp,
		Flags: append(connFlags(),
			&cli.StringFlag{Name: "dataset", Usage: "only events on this `dataset`"},
			&cli.StringFlag{Name: "job", Usage: "only events on rows of this `job`"},
			&cli.StringFlag{Name: "dataid", Usage: "only events on this `dataid`"},
			&cli.IntFlag{Name: "last", Aliases: []string{"limit"}, Value: 50, Usage: "print the last `N` recorded events first (0: none, -1: all; --limit as for chunks and history)"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "then keep printing new events until interrupted"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "`text` or json (one object per line)"},
		),
		Action: action(events),
	}
}

func events(ctx context.Context, cmd *cli.Command, c *client.Client) error {
	format := cmd.String("format")
	if format != "text" && format != "json" {
		return fmt.Errorf("--format %q: want text or json", format)
	}
	f := client.EventFilter{Dataset: cmd.String("dataset"), Job: cmd.String("job"), DataID: cmd.String("dataid")}
	out := stdout(cmd)
	last := cmd.Int("last")
	// Read the log to its end: the last events to print, and the cursor
	// to follow from.
	var tail []client.Event
	cursor := ""
	for {
		page, next, err := c.Events(ctx, f, cursor, 1000)
		if err != nil {
			return err
		}
		for _, e := range page {
			cursor = e.Cursor
			if last != 0 {
				tail = append(tail, e)
				if last > 0 && len(tail) > last {
					tail = tail[1:]
				}
			}
		}
		if next == "" {
			break
		}
	}
	for _, e := range tail {
		if err := printEvent(out, e, format); err != nil {
			return err
		}
	}
	if !cmd.Bool("follow") {
		if len(tail) == 0 && last != 0 {
			fmt.Fprintln(stderr(cmd), "no events"+whyNoEvents(ctx, c, f))
		}
		return nil
	}
	filter := client.EventFilter{Dataset: f.Dataset, Job: f.Job}
	for {
		sub, err := c.WatchEvents(ctx, cursor, filter)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for {
			m, err := sub.Next(ctx)
			if err != nil {
				_ = sub.Close()
				if ctx.Err() != nil {
					return nil
				}
				if !client.IsTransient(err) {
					return err
				}
				fmt.Fprintf(stderr(cmd), "chunklock events: the stream broke (%v); reconnecting\n", err)
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
					return nil
				}
				break
			}
			e, err := client.DecodeEvent(m)
			if err != nil {
				_ = sub.Close()
				return err
			}
			cursor = e.Cursor
			if f.DataID != "" && e.DataID != f.DataID {
				continue
			}
			if err := printEvent(out, e, format); err != nil {
				_ = sub.Close()
				return err
			}
		}
	}
}

func printEvent(w io.Writer, e client.Event, format string) error {
	if format == "json" {
		raw, err := json.Marshal(e)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", raw)
		return err
	}
	job := e.Job
	if job == "" {
		job = "-"
	}
	line := fmt.Sprintf("%s  %-8s %s/%s %s %s %s->%s attempt=%d", e.Time.Local().Format(time.RFC3339), e.Actor, e.Dataset, e.DataID, job, e.Role, e.From, e.To, e.Attempt)
	if e.Executor != "" {
		line += " executor=" + e.Executor
	}
	if e.Reason != "" {
		line += fmt.Sprintf(" reason=%q", oneLine(e.Reason, 200))
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// whyNoEvents says why a filter may have matched no event: a dataset or job
// the server does not have (the events of a deleted one stay, so it is no
// error), or a dataid the dataset does not expect; "" when none of these.
func whyNoEvents(ctx context.Context, c *client.Client, f client.EventFilter) string {
	var why []string
	if f.Dataset != "" {
		if ds, err := c.Datasets(ctx); err == nil && !slices.ContainsFunc(ds, func(d client.Dataset) bool { return d.ID == f.Dataset }) {
			why = append(why, fmt.Sprintf("the server has no dataset %q (`chunklock status` lists them)", f.Dataset))
		} else if f.DataID != "" {
			if u := unexpectedDataID(ctx, c, f.Dataset, f.DataID); u != "" {
				why = append(why, u)
			}
		}
	}
	if f.Job != "" {
		if js, err := c.Jobs(ctx); err == nil && !slices.ContainsFunc(js, func(j client.Job) bool { return j.ID == f.Job }) {
			why = append(why, fmt.Sprintf("the server has no job %q", f.Job))
		}
	}
	if len(why) == 0 {
		return ""
	}
	return ": " + strings.Join(why, "; ")
}
