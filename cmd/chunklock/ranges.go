package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/client"
)

// The range forms of publish, resubmit and hold: --from/--to (or, for
// resubmit and hold, --range FROM..TO) ask the server to apply the
// operation to every chunk of the range (publishRange, resubmitRange,
// holdRange), at most client.MaxRangeDataIDs dataids per call
// (rangepages.go splits a longer range).

const rangeHelp = "\n\nRanges: --from/--to apply the operation on the server to every chunk in [FROM, TO]\n" +
	"(dataids in shortlex order: shorter first, then byte-wise; ISO dates and zero-padded\n" +
	"numbers sort naturally). For a dataset with a partition definition that is every\n" +
	"expected dataid, chunks not there yet included; without one, the chunks the dataset\n" +
	"has. Each chunk is all or nothing: a chunk the operation refuses (RUNNING, on HOLD...)\n" +
	"is skipped, and the summary groups the skipped chunks by reason with a few examples.\n" +
	"Chunks already as asked count as unchanged, so running the same command again\n" +
	"after an interruption finishes the range without doing anything twice. The server\n" +
	"takes at most 10,000 dataids per call: a longer range is sent in calls of 10,000\n" +
	"(expected dataids, counted here from the definition; without one, the chunks the\n" +
	"dataset has, listed first), with a progress line after each."

// rangeFlagList are the --from/--to flags.
func rangeFlagList(verb string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "from", Usage: verb + " every chunk from dataid `FROM` (with --to)"},
		&cli.StringFlag{Name: "to", Usage: "... to dataid `TO`, included"},
		sliceFlag(verb + " only the tuples"),
	}
}

// sliceFlag is --slice DIMENSION=V1,V2 (SPEC §10 "Slices").
func sliceFlag(what string) cli.Flag {
	return &cli.StringSliceFlag{Name: "slice", Usage: what + " whose value of a dimension is listed, as `DIMENSION=V1,V2` " +
		"(a dataset with dimensions; repeat for several dimensions; --from/--to may then be values of the first dimension)"}
}

// sliceArgs reads --slice; nil when there is none.
func sliceArgs(cmd *cli.Command) ([]partition.Slice, error) {
	var out []partition.Slice
	// The flag splits its values at commas: a part without = is one more
	// value of the slice before it.
	var parts []string
	for _, s := range cmd.StringSlice("slice") {
		if n := len(parts); n > 0 && !strings.Contains(s, "=") {
			parts[n-1] += "," + s
			continue
		}
		parts = append(parts, s)
	}
	for _, s := range parts {
		dim, values, ok := strings.Cut(s, "=")
		if !ok || dim == "" || values == "" {
			return nil, fmt.Errorf("--slice %q: want DIMENSION=V1,V2, e.g. --slice region=eu,us", s)
		}
		out = append(out, partition.Slice{Dimension: dim, Values: strings.Split(values, ",")})
	}
	return out, nil
}

// rangeArgs reads --from/--to, or FROM..TO from --range when rangeFlag is
// set; ok is false when neither is given.
func rangeArgs(cmd *cli.Command, rangeFlag bool) (from, to string, ok bool, err error) {
	from, to = cmd.String("from"), cmd.String("to")
	if (from == "") != (to == "") {
		return "", "", false, errors.New("give both --from and --to")
	}
	if rangeFlag && cmd.String("range") != "" {
		if from != "" {
			return "", "", false, errors.New("give --from/--to or --range, not both")
		}
		var found bool
		if from, to, found = strings.Cut(cmd.String("range"), ".."); !found || from == "" || to == "" {
			return "", "", false, fmt.Errorf("--range %q: want FROM..TO, e.g. 2026-01-01..2026-01-31", cmd.String("range"))
		}
	}
	if from == "" {
		return "", "", false, nil
	}
	for _, id := range []string{from, to} {
		if err := backends.ValidateDataID(id); err != nil {
			return "", "", false, err
		}
	}
	if backends.CompareDataID(from, backends.UpperBound(to)) > 0 {
		return "", "", false, fmt.Errorf("--from %s is after --to %s (dataids order shortlex: shorter first, then byte-wise)", from, to)
	}
	return from, to, true, nil
}

// checkStaticSlice refuses a slice value that the STATIC dimensions of
// defs do not list: a typo (--slice region=mars) would otherwise change or
// show nothing, or only the other values listed, without a word. A value
// is known when one of defs lists it, or has the dimension of another kind
// (a DYNAMIC value is not checked: one removed from the set keeps its
// chunks).
func checkStaticSlice(defs []*partition.Def, slice []partition.Slice) error {
	for _, sl := range slice {
		for _, v := range sl.Values {
			known, static := false, false
			var listed []string
			for _, def := range defs {
				if def == nil {
					continue
				}
				for _, dim := range def.Dimensions {
					if dim.Name != sl.Dimension {
						continue
					}
					if dim.Kind != partition.Static {
						known = true
						continue
					}
					static, listed = true, dim.Values
					known = known || slices.Contains(dim.Values, v)
				}
			}
			if static && !known {
				return fmt.Errorf("--slice %s=%s: %q is not a value of dimension %s (its values: %s)",
					sl.Dimension, strings.Join(sl.Values, ","), v, sl.Dimension, strings.Join(listed, ", "))
			}
		}
	}
	return nil
}

// rangeCall is one range mutation over [from, to] (of a slice, when not
// nil).
type rangeCall func(ctx context.Context, from, to string, slice []partition.Slice) (client.RangeResult, error)

// runRange applies call to [from, to] of dataset, a page of at most
// client.MaxRangeDataIDs expected dataids at a time when the dataset has
// a partition definition, and prints a summary; past means what a
// changed chunk became ("published"), already what an unchanged one was.
func runRange(ctx context.Context, cmd *cli.Command, c *client.Client, dataset, from, to, past, already string, call rangeCall) error {
	slice, err := sliceArgs(cmd)
	if err != nil {
		return err
	}
	if len(slice) > 0 {
		def, err := c.DatasetPartitions(ctx, dataset)
		if err != nil {
			return err
		}
		if err := checkStaticSlice([]*partition.Def{def}, slice); err != nil {
			return fmt.Errorf("%w; nothing was changed", err)
		}
	}
	pages, err := rangePages(ctx, c, dataset, from, to, slice)
	if err != nil {
		return err
	}
	var total client.RangeResult
	for i, p := range pages {
		r, err := call(ctx, p[0], p[1], slice)
		if err != nil {
			if i > 0 {
				printRangeSummary(stdout(cmd), dataset, past, already, total)
				return fmt.Errorf("%w\n(the calls before this one were applied: run the same command again to finish the range)", err)
			}
			return err
		}
		total.Changed += r.Changed
		total.Unchanged += r.Unchanged
		total.Skipped = append(total.Skipped, r.Skipped...)
		if len(pages) > 1 {
			fmt.Fprintf(stderr(cmd), "%s: %d of %d calls done, up to %s: %d %s, %d unchanged, %d skipped\n",
				dataset, i+1, len(pages), p[1], total.Changed, past, total.Unchanged, len(total.Skipped))
		}
	}
	printRangeSummary(stdout(cmd), dataset, past, already, total)
	if total.Changed == 0 && total.Unchanged == 0 && len(total.Skipped) == 0 {
		fmt.Fprintln(stderr(cmd), emptyRangeHint(ctx, c, dataset, from, to, slice))
	}
	return nil
}

// emptyRangeHint says why a range held nothing: what the dataset's
// definition expects, or that it has no chunk there; with a slice, that
// nothing in the range was within it, and what the definition expects. It
// goes to stderr: stdout keeps the summary.
func emptyRangeHint(ctx context.Context, c *client.Client, dataset, from, to string, slice []partition.Slice) string {
	def, err := c.DatasetPartitions(ctx, dataset)
	var expects string // what the definition expects, "" when it says nothing
	switch {
	case err != nil || def == nil:
	case def.Kind == partition.Dimensional && len(def.Dimensions) > 0 && def.Dimensions[0].Start != "":
		expects = fmt.Sprintf("its dimension %s starts at %s", def.Dimensions[0].Name, def.Dimensions[0].Start)
	case def.Start != "" || def.End != "":
		expects = fmt.Sprintf("its definition runs from %s to %s", orText(def.Start, "its first"), orText(def.End, "no end"))
	}
	if len(slice) > 0 {
		var parts []string
		for _, s := range slice {
			parts = append(parts, s.Dimension+"="+strings.Join(s.Values, ","))
		}
		msg := fmt.Sprintf("(nothing of %s in %s..%s within the slice %s", dataset, from, to, strings.Join(parts, " "))
		if expects != "" {
			msg += "; " + expects
		}
		return msg + ")"
	}
	switch {
	case err != nil || def == nil:
		return fmt.Sprintf("(%s has no chunk in %s..%s)", dataset, from, to)
	case expects != "":
		return fmt.Sprintf("(%s expects no dataid in %s..%s: %s)", dataset, from, to, expects)
	}
	return fmt.Sprintf("(%s expects no dataid in %s..%s)", dataset, from, to)
}

func orText(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// printRangeSummary says what a range did and why chunks were skipped,
// grouped by reason (the dataid taken out), with a few examples each.
func printRangeSummary(w io.Writer, dataset, past, already string, r client.RangeResult) {
	fmt.Fprintf(w, "%s %d chunk(s) of %s", past, r.Changed, dataset)
	if r.Unchanged > 0 {
		fmt.Fprintf(w, "; %d %s already", r.Unchanged, already)
	}
	if len(r.Skipped) == 0 {
		fmt.Fprintln(w, "; none skipped")
		return
	}
	fmt.Fprintf(w, "; skipped %d:\n", len(r.Skipped))
	type group struct {
		reason string
		ids    []string
	}
	var groups []*group
	byReason := map[string]*group{}
	for _, s := range r.Skipped {
		reason := s.Code + ": " + strings.ReplaceAll(s.Reason, s.DataID, "{dataid}")
		g := byReason[reason]
		if g == nil {
			g = &group{reason: reason}
			byReason[reason] = g
			groups = append(groups, g)
		}
		g.ids = append(g.ids, s.DataID)
	}
	const examples = 5
	for _, g := range groups {
		ids := strings.Join(g.ids[:min(len(g.ids), examples)], ", ")
		if len(g.ids) > examples {
			ids += fmt.Sprintf(" and %d more", len(g.ids)-examples)
		}
		fmt.Fprintf(w, "  %d × %s\n      %s\n", len(g.ids), oneLine(g.reason, 160), ids)
	}
}
