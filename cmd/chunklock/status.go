package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/client"
	"github.com/chunklock/chunklock/runner"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Category:  catView,
		Usage:     "show each dataset's chunks by status, the live claims and the chunks in trouble",
		UsageText: "chunklock status [--dataset D] [--job J] [--dataset D --by DIMENSION [--behind]]",
		Description: "Prints three tables: per dataset (sources first, then in pipeline order) how many\n" +
			"chunks are READY, RUNNING, FAILED, RESUBMIT and HOLD and the newest READY dataid; the\n" +
			"live claims with their executor and lease; and the first 20 FAILED and 20 HOLD chunks of\n" +
			"each dataset with their reason. Datasets with a partition definition also get a line of\n" +
			"missing chunks (due, never produced or published) and late chunks (not READY by their\n" +
			"deadline), with the oldest of each. The server counts (one request a dataset): status\n" +
			"reads no dataset's rows but those FAILED and HOLD chunks, however long its history.\n" +
			"A job whose env names a variable runners refuse (see `chunklock run --help`; stored by a\n" +
			"server older than that rule, or one that allows more) is named, with the variable and\n" +
			"why: runners claim nothing for it. Datasets with a retention of their own are listed\n" +
			"with it.\n" +
			"--job narrows it to the job's inputs and output, --dataset to one dataset.\n\n" +
			"A dataset with STATIC or DYNAMIC dimensions (a region, a customer) gets a line per such\n" +
			"dimension naming its values behind (missing or late chunks), the first 5 of them: a\n" +
			"customer whose feed stopped is one line. --by DIMENSION (with --dataset) lists every\n" +
			"value of the dimension with its counts, --behind only those behind.\n\n" +
			"Examples:\n" +
			"   chunklock status --job transform\n" +
			"   chunklock status --dataset orders --by customer --behind" + connHelp,
		Flags: append(connFlags(),
			&cli.StringFlag{Name: "dataset", Usage: "only this `dataset`"},
			&cli.StringFlag{Name: "job", Usage: "only this `job`'s inputs and output"},
			&cli.StringFlag{Name: "by", Usage: "with --dataset: list the missing and late chunks by value of its STATIC or DYNAMIC `DIMENSION`"},
			&cli.BoolFlag{Name: "behind", Usage: "with --by: only the values with missing or late chunks"},
			envAllowFlag("job env `NAME`s not to name although the rule on env names refuses them: those your runners are given with --env-allow"),
		),
		Action: action(status),
	}
}

// pipelineView is the catalog as the views need it.
type pipelineView struct {
	datasets []client.Dataset // in pipeline order: sources first
	jobs     map[string]client.Job
	producer map[string]string
}

func loadPipeline(ctx context.Context, c *client.Client) (pipelineView, error) {
	ds, err := c.Datasets(ctx)
	if err != nil {
		return pipelineView{}, err
	}
	js, err := c.Jobs(ctx)
	if err != nil {
		return pipelineView{}, err
	}
	v := pipelineView{jobs: map[string]client.Job{}, producer: map[string]string{}}
	for _, j := range js {
		v.jobs[j.ID] = j
		v.producer[j.Output] = j.ID
	}
	depth := map[string]int{}
	var depthOf func(d string, seen int) int
	depthOf = func(d string, seen int) int {
		if n, ok := depth[d]; ok {
			return n
		}
		n := 0
		if p, ok := v.producer[d]; ok && seen < 1000 {
			for _, in := range v.jobs[p].Inputs {
				n = max(n, depthOf(in, seen+1)+1)
			}
			n = max(n, 1)
		}
		depth[d] = n
		return n
	}
	slices.SortFunc(ds, func(a, b client.Dataset) int {
		if da, db := depthOf(a.ID, 0), depthOf(b.ID, 0); da != db {
			return da - db
		}
		return strings.Compare(a.ID, b.ID)
	})
	v.datasets = ds
	return v, nil
}

// selectDatasets returns the dataset ids the --dataset and --job flags
// select, in pipeline order.
func (v pipelineView) selectDatasets(dataset, job string, more []string) ([]string, error) {
	want := map[string]bool{}
	if dataset != "" {
		want[dataset] = true
	}
	for _, d := range more {
		want[d] = true
	}
	if job != "" {
		j, ok := v.jobs[job]
		if !ok {
			return nil, fmt.Errorf("job %q not found; `chunklock status` lists the jobs", job)
		}
		for _, in := range j.Inputs {
			want[in] = true
		}
		want[j.Output] = true
	}
	var out []string
	all := len(want) == 0
	for _, d := range v.datasets {
		if all || want[d.ID] {
			out = append(out, d.ID)
			delete(want, d.ID)
		}
	}
	for d := range want {
		return nil, fmt.Errorf("dataset %q not found; `chunklock status` lists the datasets", d)
	}
	return out, nil
}

var statusOrder = []string{"READY", "RUNNING", "FAILED", "RESUBMIT", "HOLD"}

func status(ctx context.Context, cmd *cli.Command, c *client.Client) error {
	allow, err := envAllow(cmd)
	if err != nil {
		return err
	}
	switch by := cmd.String("by"); {
	case by != "" && cmd.String("dataset") == "":
		return errors.New("--by lists one dataset's values: give --dataset too")
	case by != "":
		return printValues(ctx, stdout(cmd), c, cmd.String("dataset"), by, cmd.Bool("behind"))
	case cmd.Bool("behind"):
		return errors.New("--behind applies with --by DIMENSION")
	}
	v, err := loadPipeline(ctx, c)
	if err != nil {
		return err
	}
	// With two servers on a machine (a quick start beside the set-up's),
	// one opened in a terminal without CHUNKLOCK_URL is the default: say so.
	if from := urlFrom(cmd); strings.HasPrefix(from, urlFromDefault) {
		fmt.Fprintf(stderr(cmd), "chunklock status: the server at %s, %s\n", cmd.String("url"), from)
	}
	ids, err := v.selectDatasets(cmd.String("dataset"), cmd.String("job"), nil)
	if err != nil {
		return err
	}
	out := stdout(cmd)
	if len(ids) == 0 {
		fmt.Fprintln(out, "no datasets yet: declare them in a pipeline file and run `chunklock apply -f pipeline.yaml`")
		return nil
	}
	counts, err := datasetCounts(ctx, c, ids)
	if err != nil {
		return err
	}
	if err := printCounts(out, v, counts); err != nil {
		return err
	}
	if err := printSummaries(ctx, out, c, v, ids); err != nil {
		return err
	}
	job := cmd.String("job")
	if job == "" && cmd.String("dataset") != "" {
		job = v.producer[cmd.String("dataset")]
	}
	printRefusedEnv(out, v, ids, job, allow)
	printRetention(out, v, ids)
	if err := printClaims(ctx, out, c, job, job != "" || cmd.String("dataset") == ""); err != nil {
		return err
	}
	return printTrouble(ctx, out, c, counts)
}

// printRetention says which of the datasets ids keep their events for
// their own time rather than the server's --retain-events; nothing when
// none does.
func printRetention(out io.Writer, v pipelineView, ids []string) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var lines []string
	for _, d := range v.datasets {
		if !want[d.ID] || d.Retention == nil {
			continue
		}
		keep := "for ever"
		if s := d.Retention.EventsSeconds; s > 0 {
			keep = "for " + retentionText(time.Duration(s)*time.Second)
		}
		lines = append(lines, fmt.Sprintf("dataset %s keeps its events %s", d.ID, keep))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(out, strings.Join(lines, "\n"))
	fmt.Fprintln(out, "(the other datasets' events are kept as the server's --retain-events says; status rows and catalog changes are never pruned)")
}

// retentionText writes a retention in days when it is whole days.
func retentionText(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}

// printClaims prints the live claims of job ("": of every job), or says
// there are none; with list false, it says there are none.
func printClaims(ctx context.Context, out io.Writer, c *client.Client, job string, list bool) error {
	var claims []client.Claim
	if list {
		var err error
		if claims, err = c.Claims(ctx, job); err != nil {
			return err
		}
	}
	fmt.Fprintln(out)
	if len(claims) == 0 {
		fmt.Fprintln(out, "no live claims")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LIVE CLAIMS\tDATAID\tATTEMPT\tEXECUTOR\tLEASE LEFT")
	for _, cl := range claims {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", cl.Job, cl.DataID, cl.Attempt, cl.Executor, time.Until(cl.LeaseExpiresAt).Round(time.Second))
	}
	return tw.Flush()
}

// printRefusedEnv names each job, among the producers of ids (only job
// when it is not ""), whose env names a variable that runners refuse (the
// rule on env names, but for the names of allow): a job stored by a server
// older than the rule, or by one that allows more than the runners. Such a
// job claims nothing, so its output falls behind without a failed chunk to
// show why.
func printRefusedEnv(out io.Writer, v pipelineView, ids []string, job string, allow envname.Allow) {
	named := false
	for _, d := range ids {
		j, ok := v.jobs[v.producer[d]]
		if !ok || (job != "" && j.ID != job) {
			continue
		}
		var envErr *runner.EnvError
		if !errors.As(runner.CheckEnv(client.Claim{Job: j.ID, Env: j.Env}, allow), &envErr) {
			continue
		}
		if !named {
			fmt.Fprintln(out)
			named = true
		}
		for _, err := range envErr.Errs {
			fmt.Fprintf(out, "job %s: runners refuse its env: %v\n", j.ID, err)
		}
	}
	if named {
		fmt.Fprintln(out, "runners claim nothing for such a job: remove the name from its env (the pipeline file, then `chunklock apply`)")
	}
}

// oneLine shortens s to one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return "…" + string(r[len(r)-n+1:])
	}
	return s
}

func chunksCommand() *cli.Command {
	return &cli.Command{
		Name:      "chunks",
		Category:  catView,
		Usage:     "show chunk statuses as a grid: dataids down, datasets across",
		UsageText: "chunklock chunks [--dataset D...] [--job J] [--from X] [--to Y] [--slice DIMENSION=V1,V2] [--limit N] [--missing] [--late]",
		Description: "One row per dataid (the last --limit, in dataid order), one column per dataset\n" +
			"(sources first, then in pipeline order), one mark per chunk:\n" +
			"   .  no chunk yet    R  RUNNING    #  READY    F  FAILED    S  RESUBMIT    H  HOLD\n" +
			"Colours on a terminal unless NO_COLOR is set.\n\n" +
			"With --missing or --late it lists instead, for the datasets that have a partition\n" +
			"definition, the expected chunks that are missing (due, never produced or published)\n" +
			"or late (not READY by their deadline), in dataid order (the first --limit per dataset);\n" +
			"with both, the chunks that are both.\n\n" +
			"With --slice (datasets with dimensions) it shows the expected tuples whose values of\n" +
			"the sliced dimensions are listed, due ones not made yet included; --from/--to may then\n" +
			"be values of the first dimension.\n\n" +
			"Examples:\n" +
			"   chunklock chunks --job report --from 2026-01-01 --to 2026-01-31\n" +
			"   chunklock chunks --dataset sales --late\n" +
			"   chunklock chunks --dataset feeds --slice region=eu --from 2026-11-01 --to 2026-11-30" + connHelp,
		Flags: append(append(connFlags(),
			&cli.StringSliceFlag{Name: "dataset", Usage: "show this `dataset` (repeat for several; default all)"},
			&cli.StringFlag{Name: "job", Usage: "show this `job`'s inputs and output"},
			&cli.StringFlag{Name: "from", Usage: "first `dataid` (inclusive, shortlex order)"},
			&cli.StringFlag{Name: "to", Usage: "last `dataid` (inclusive)"},
			&cli.IntFlag{Name: "limit", Value: 50, Usage: "show the last `N` dataids (0: all); with --missing/--late the first N per dataset"},
			sliceFlag("show only the tuples"),
		), partitionFlags()...),
		Action: action(chunks),
	}
}

var (
	cellMark  = map[string]string{"": ".", "NONE": ".", "RUNNING": "R", "READY": "#", "FAILED": "F", "RESUBMIT": "S", "HOLD": "H", "MIXED": "~"}
	cellColor = map[string]string{"RUNNING": "\x1b[36m", "READY": "\x1b[32m", "FAILED": "\x1b[31m", "RESUBMIT": "\x1b[33m", "HOLD": "\x1b[35m"}
)

// slicedRows reads a slice of a dataset with dimensions as its partitions
// (missing ones included, as NONE) in the shape of status rows.
func slicedRows(ctx context.Context, c *client.Client, dataset, from, to string, slice []partition.Slice) ([]client.StatusRow, error) {
	ps, err := c.Partitions(ctx, client.PartitionFilter{Dataset: dataset, From: from, To: to, Slice: slice})
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", dataset, err)
	}
	rows := make([]client.StatusRow, len(ps))
	for i, p := range ps {
		rows[i] = client.StatusRow{Dataset: dataset, DataID: p.DataID, Status: p.Status}
	}
	return rows, nil
}

func chunks(ctx context.Context, cmd *cli.Command, c *client.Client) error {
	v, err := loadPipeline(ctx, c)
	if err != nil {
		return err
	}
	ids, err := v.selectDatasets("", cmd.String("job"), cmd.StringSlice("dataset"))
	if err != nil {
		return err
	}
	out := stdout(cmd)
	if len(ids) == 0 {
		fmt.Fprintln(out, "no datasets yet: declare them in a pipeline file and run `chunklock apply -f pipeline.yaml`")
		return nil
	}
	slice, err := sliceArgs(cmd)
	if err != nil {
		return err
	}
	if slice != nil {
		// A slice shows the datasets that have every dimension it names.
		var sliced []string
		for _, d := range v.datasets {
			def := d.Backend().Partitions
			if def == nil || def.Kind != partition.Dimensional || !slices.Contains(ids, d.ID) {
				continue
			}
			if !slices.ContainsFunc(slice, func(sl partition.Slice) bool { return !slices.Contains(def.DimensionNames(), sl.Dimension) }) {
				sliced = append(sliced, d.ID)
			}
		}
		// A STATIC value no dataset shown has is a typo, not an empty slice.
		var defs []*partition.Def
		for _, d := range v.datasets {
			if slices.Contains(sliced, d.ID) {
				defs = append(defs, d.Backend().Partitions)
			}
		}
		if err := checkStaticSlice(defs, slice); err != nil {
			return err
		}
		if len(sliced) == 0 {
			var dims []string
			for _, sl := range slice {
				dims = append(dims, sl.Dimension)
			}
			return fmt.Errorf("--slice: no dataset shown has the dimension(s) %s", strings.Join(dims, ", "))
		}
		ids = sliced
	}
	if cmd.Bool("missing") || cmd.Bool("late") {
		return listPartitions(ctx, cmd, c, v, ids)
	}
	grid := map[string]map[string]string{} // dataid -> dataset -> status
	// Beside other datasets, a dataset with dimensions shows one mark per
	// value of its first dimension (a date), not a row per tuple: its
	// tuples' status when they all have the same, "~" when they differ.
	grouped := map[string]partition.Def{}
	if slice == nil && len(ids) > 1 {
		for _, d := range v.datasets {
			if def := d.Backend().Partitions; def != nil && def.Kind == partition.Dimensional && slices.Contains(ids, d.ID) {
				grouped[d.ID] = *def
			}
		}
	}
	groups := map[[2]string][]string{} // (first value, dataset) -> statuses
	for _, d := range ids {
		var rows []client.StatusRow
		if slice != nil {
			rows, err = slicedRows(ctx, c, d, cmd.String("from"), cmd.String("to"), slice)
		} else {
			rows, err = c.Chunks(ctx, client.ChunkFilter{Dataset: d, Role: "OUTPUT", From: cmd.String("from"), To: cmd.String("to")})
		}
		if err != nil {
			return err
		}
		for _, r := range rows {
			id := r.DataID
			if _, ok := grouped[d]; ok {
				id, _, _ = strings.Cut(id, "|")
				groups[[2]string{id, d}] = append(groups[[2]string{id, d}], r.Status)
			}
			if grid[id] == nil {
				grid[id] = map[string]string{}
			}
			grid[id][r.Dataset] = r.Status
		}
	}
	for k, sts := range groups {
		n, err := grouped[k[1]].Count(k[0], k[0])
		if err != nil || int64(len(sts)) != n || slices.ContainsFunc(sts, func(s string) bool { return s != sts[0] }) {
			grid[k[0]][k[1]] = "MIXED"
		}
	}
	dataids := make([]string, 0, len(grid))
	for d := range grid {
		dataids = append(dataids, d)
	}
	slices.SortFunc(dataids, backends.CompareDataID)
	total := len(dataids)
	if limit := cmd.Int("limit"); limit > 0 && total > limit {
		dataids = dataids[total-limit:]
	}
	if total == 0 {
		fmt.Fprintln(out, "no chunks yet (publish source chunks with `chunklock publish`)")
		return nil
	}
	color := useColor(out)
	width := len("DATAID")
	for _, d := range dataids {
		width = max(width, len(d))
	}
	fmt.Fprintf(out, "%-*s", width, "DATAID")
	for _, d := range ids {
		fmt.Fprintf(out, "  %s", d)
	}
	fmt.Fprintln(out)
	for _, dataid := range dataids {
		var line strings.Builder
		fmt.Fprintf(&line, "%-*s", width, dataid)
		for _, d := range ids {
			st := grid[dataid][d]
			mark := cellMark[st]
			if color && cellColor[st] != "" {
				mark = cellColor[st] + mark + "\x1b[0m"
			}
			fmt.Fprintf(&line, "  %s%s", mark, strings.Repeat(" ", len(d)-1))
		}
		fmt.Fprintln(out, strings.TrimRight(line.String(), " "))
	}
	if len(dataids) < total {
		fmt.Fprintf(out, "(the last %d of %d dataids; see more with --limit, --from, --to)\n", len(dataids), total)
	}
	legend := "legend: . none  R running  # ready  F failed  S resubmit  H hold"
	if len(grouped) > 0 {
		legend += "  ~ mixed (a dataset with dimensions: one mark per first value; --dataset D or --slice shows each)"
	}
	fmt.Fprintln(out, legend)
	return nil
}

// useColor tells whether w is a terminal that should get colours.
func useColor(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
