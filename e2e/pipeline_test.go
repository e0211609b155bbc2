//go:build linux

package e2e

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
)

const exampleDir = "../examples/daily-pipeline"

// copyExample copies the daily-pipeline example to dir, with its data root
// /tmp/chunklock-daily moved to dataRoot and every job's lease shortened to
// two seconds.
func copyExample(t *testing.T, dir, dataRoot string) {
	t.Helper()
	err := filepath.WalkDir(exampleDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(exampleDir, path)
		target := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
	require.NoError(t, err)
	path := filepath.Join(dir, "pipeline.yaml")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	yaml := string(raw)
	require.Contains(t, yaml, "/tmp/chunklock-daily")
	require.Equal(t, 7, strings.Count(yaml, "leaseSeconds: 30"), "the test shortens every job's lease")
	yaml = strings.ReplaceAll(yaml, "/tmp/chunklock-daily", dataRoot)
	yaml = strings.ReplaceAll(yaml, "leaseSeconds: 30", "leaseSeconds: 2")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o644))
}

var produced = map[string][]string{ // dataset -> its producer's inputs
	"orders":         {}, // extract is a root job on the daily schedule of orders
	"orders-clean":   {"orders"},
	"daily-report":   {"orders-clean"},
	"reconciliation": {"orders", "orders-clean", "payments"},
}

// allDatasets are the example's daily datasets, in the order `chunklock
// status` and `chunklock chunks` show them.
var allDatasets = []string{"payments", "orders", "orders-clean", "daily-report", "reconciliation", "revenue-7d"}

// regions are the values of revenue-by-region's region dimension.
var regions = []string{"emea", "americas", "apac"}

// weeks are the ISO weeks of the example's weekly-report: 2026-01-01 is a
// Thursday of 2026-W01, 2026-01-30 the Friday of 2026-W05.
var weeks = []string{"2026-W01", "2026-W02", "2026-W03", "2026-W04", "2026-W05"}

// mappedReads are the days of orders-clean that the rolling and weekly jobs
// read for an output dataid (SPEC §9), within 2026-01-01..2026-01-30.
func mappedReads(dataset, dataid string) []string {
	switch dataset {
	case "revenue-7d":
		d, _ := time.Parse(time.DateOnly, dataid)
		var out []string
		for i := -6; i <= 0; i++ {
			if day := d.AddDate(0, 0, i).Format(time.DateOnly); day >= "2026-01-01" {
				out = append(out, day)
			}
		}
		return out
	case "weekly-report":
		var out []string
		for _, day := range dates("2026-01-01", 30) {
			t, _ := time.Parse(time.DateOnly, day)
			if y, w := t.ISOWeek(); fmt.Sprintf("%d-W%02d", y, w) == dataid {
				out = append(out, day)
			}
		}
		return out
	}
	return nil
}

// TestDailyPipeline runs the example pipeline over 30 days with four
// runners, one of which is killed (SIGKILL) in the middle of a chunk. The
// root job extract claims each due day of its schedule by itself; the source
// payments is published with one day left out, whose reconciliation waits,
// shown late, until that day is published and one more runner finishes it.
func TestDailyPipeline(t *testing.T) {
	s := startServer(t)
	root := t.TempDir()
	example, data, keys, pause := filepath.Join(root, "example"), filepath.Join(root, "data"), filepath.Join(root, "keys"), filepath.Join(root, "pause")
	require.NoError(t, os.MkdirAll(pause, 0o755))
	copyExample(t, example, data)
	const pauseAt = "transform/2026-01-15"
	env := []string{"SHOP_EXPORT_TOKEN=tok-123", "DAILY_ROOT=" + data, "EXAMPLE_DIR=" + example, "PAUSE_AT=" + pauseAt, "PAUSE_DIR=" + pause}
	inExample := func(args ...string) result {
		t.Helper()
		r := s.run(t, example, env, args...)
		require.Equal(t, 0, r.code, "chunklock %v\n%s", args, r)
		return r
	}

	// apply: a dry run changes nothing; the first apply creates everything
	// and writes the keys; the second changes nothing.
	r := inExample("apply", "-f", "pipeline.yaml", "--dry-run")
	require.Contains(t, r.stdout, "dry run: 18 change(s) would be applied")
	ds, err := s.api.Datasets(t.Context())
	require.NoError(t, err)
	require.Empty(t, ds, "a dry run creates nothing")

	r = inExample("apply", "-f", "pipeline.yaml", "--keys-dir", keys)
	require.Contains(t, r.stdout, "applied 18 change(s)")
	require.NotContains(t, r.stdout, "AGE-SECRET-KEY", "with --keys-dir keys go to files, not to the output")
	for _, job := range []string{"extract", "transform", "report", "reconcile", "rolling", "weekly", "by-region"} {
		st, err := os.Stat(filepath.Join(keys, job+".key"))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	}
	r = inExample("apply", "-f", "pipeline.yaml", "--keys-dir", keys)
	require.Contains(t, r.stdout, "applied 0 change(s) and re-sent 3 existing secret(s)")

	script := func(name string, args ...string) string {
		t.Helper()
		p := startProgram(t, append(append([]string{}, s.env...), env...), example, filepath.Join(example, name), args...)
		require.Equal(t, 0, p.wait(t, time.Minute), "%s:\n%s", name, p.stderr)
		return p.stdout.String()
	}
	require.Contains(t, script("make-raw.sh", "2026-01-01..2026-01-30"), "exported 30 day(s)")
	out := script("make-payments.sh", "2026-01-01..2026-01-16", "2026-01-18..2026-01-30")
	require.Contains(t, out, "published 16 chunk(s) of payments")
	require.Contains(t, out, "published 13 chunk(s) of payments")

	// Four runners serving every job.
	var runners []*proc
	for range 4 {
		runners = append(runners, start(t, append(append([]string{}, s.env...), env...), example,
			"run", "--keys-dir", keys, "--job", "extract", "--job", "transform", "--job", "report", "--job", "reconcile", "--job", "rolling", "--job", "weekly", "--job", "by-region",
			"--loop", "--idle-wait", "8s", "--kill-grace", "2s", "--", "sh", filepath.Join(mustAbs(t, "testdata"), "pause.sh")))
	}

	// Kill -9 the runner working on the paused chunk, mid-chunk.
	startedFile := filepath.Join(pause, "started")
	eventually(t, 60*time.Second, "the paused chunk to start", func() bool { _, err := os.Stat(startedFile); return err == nil })
	raw, err := os.ReadFile(startedFile)
	require.NoError(t, err)
	var childPid, runnerPid int
	var killedExecutor string
	_, err = fmt.Sscan(string(raw), &childPid, &runnerPid, &killedExecutor)
	require.NoError(t, err)
	var killed *proc
	for _, p := range runners {
		if p.cmd.Process.Pid == runnerPid {
			killed = p
		}
	}
	require.NotNil(t, killed, "the paused job's parent is one of the runners")
	require.NoError(t, killed.cmd.Process.Signal(syscall.SIGKILL))
	killed.wait(t, 10*time.Second)
	// On Linux the job process dies with its runner (Pdeathsig).
	eventually(t, 10*time.Second, "the killed runner's job process to die", func() bool { return !alive(childPid) })
	// Were it still running, this would let it go on to its result.
	require.NoError(t, os.WriteFile(filepath.Join(pause, "go"), nil, 0o644))

	for _, p := range runners {
		if p == killed {
			continue
		}
		code := p.wait(t, 90*time.Second)
		require.Equal(t, 0, code, "runner:\n%s", p.stderr)
		require.Contains(t, p.stderr.String(), "nothing left to do")
	}

	// Everything is done but the reconciliation of the day whose payments
	// never arrived: that day is missing and late, and reconcile waits.
	r = s.ok(t, "status")
	require.Regexp(t, `(?m)^reconciliation\s+reconcile\s+29\s+29\s+0\s+0\s+0\s+0\s+2026-01-30$`, r.stdout)
	require.Regexp(t, `(?m)^payments\s+1\s+1\s+2026-01-17\s+2026-01-17$`, r.stdout)
	require.Regexp(t, `(?m)^orders\s+0\s+0\s+-\s+-$`, r.stdout)
	r = s.ok(t, "chunks", "--dataset", "payments", "--late")
	require.Regexp(t, `(?m)^payments\s+2026-01-17\s+NONE\s+\S+\s+late$`, r.stdout)
	require.Equal(t, 2, strings.Count(r.stdout, "\n"), "header and the one late day:\n%s", r.stdout)
	r = s.ok(t, "blockers", "--job", "reconcile", "--dataid", "2026-01-17")
	require.Contains(t, r.stdout, "INPUT_NOT_READY  input chunk payments 2026-01-17 is NONE")
	_, err = os.Stat(filepath.Join(data, "reconciliation", "2026-01-17.txt"))
	require.ErrorIs(t, err, fs.ErrNotExist)

	// The settlement arrives: one more runner finishes the day.
	require.Contains(t, script("make-payments.sh", "2026-01-17..2026-01-17"), "published 1 chunk(s) of payments")
	last := start(t, append(append([]string{}, s.env...), env...), example,
		"run", "--keys-dir", keys, "--job", "extract", "--job", "transform", "--job", "report", "--job", "reconcile", "--job", "rolling", "--job", "weekly", "--job", "by-region",
		"--loop", "--idle-wait", "2s", "--", "sh", filepath.Join(mustAbs(t, "testdata"), "pause.sh"))
	require.Equal(t, 0, last.wait(t, 60*time.Second), "runner:\n%s", last.stderr)
	require.Contains(t, last.stderr.String(), "nothing left to do: 1 completed")

	// Every chunk was produced exactly once, in dependency order.
	evs := s.events(t, client.EventFilter{})
	readyAt := map[string]int{} // dataset/dataid -> index of its READY event
	for i, e := range evs {
		if e.Role != "OUTPUT" || e.To != "READY" {
			continue
		}
		key := e.Dataset + "/" + e.DataID
		_, dup := readyAt[key]
		require.False(t, dup, "%s became READY twice", key)
		readyAt[key] = i
	}
	days := dates("2026-01-01", 30)
	for _, d := range days {
		for _, ds := range allDatasets {
			require.Contains(t, readyAt, ds+"/"+d, "%s %s was never produced", ds, d)
		}
	}
	for _, w := range weeks {
		require.Contains(t, readyAt, "weekly-report/"+w, "week %s was never produced", w)
	}
	for _, d := range days {
		for _, region := range regions {
			require.Contains(t, readyAt, "revenue-by-region/"+d+"|"+region, "%s of %s was never produced", region, d)
		}
	}
	require.Len(t, readyAt, 6*30+5+3*30)
	claims := 0
	for i, e := range evs {
		if e.Role != "OUTPUT" || e.To != "RUNNING" {
			continue
		}
		if reads := mappedReads(e.Dataset, e.DataID); reads != nil {
			// A mapped job claims its output once every day it reads is READY.
			claims++
			for _, day := range reads {
				require.Less(t, readyAt["orders-clean/"+day], i, "%s %s claimed before orders-clean %s was READY", e.Dataset, e.DataID, day)
			}
			continue
		}
		inputs, ok := produced[e.Dataset]
		if !ok {
			continue
		}
		claims++
		for _, in := range inputs {
			require.Less(t, readyAt[in+"/"+e.DataID], i, "%s %s claimed before its input %s was READY", e.Dataset, e.DataID, in)
		}
	}
	require.GreaterOrEqual(t, claims, 5*30+5+1, "the killed chunk was claimed twice")

	// The killed chunk: claimed by the killed runner, failed by the reaper
	// once its lease passed, redone by another runner, completed once.
	var hist []string
	for _, e := range s.events(t, client.EventFilter{Dataset: "orders-clean", DataID: "2026-01-15"}) {
		if e.Role != "OUTPUT" {
			continue
		}
		who := "other"
		if e.Executor == killedExecutor {
			who = "killed"
		}
		step := fmt.Sprintf("%s->%s attempt %d by %s", e.From, e.To, e.Attempt, who)
		if e.To == "FAILED" {
			step += " (" + e.Reason + ")"
		}
		hist = append(hist, step)
	}
	require.Equal(t, []string{
		"NONE->RUNNING attempt 1 by killed",
		"RUNNING->FAILED attempt 1 by killed (" + backends.ReasonLeaseExpired + ")",
		"FAILED->RUNNING attempt 2 by other",
		"RUNNING->READY attempt 2 by other",
	}, hist)

	// The outputs are there and right.
	for _, d := range days {
		sum, n := rawTotals(t, filepath.Join(data, "shop", "orders-"+d+".csv"))
		got, err := os.ReadFile(filepath.Join(data, "reconciliation", d+".txt"))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("OK %s %d\n", d, sum), string(got))
		got, err = os.ReadFile(filepath.Join(data, "reports", d+".txt"))
		require.NoError(t, err)
		require.Contains(t, string(got), fmt.Sprintf("day %s: %d orders, revenue %d.%02d EUR", d, n, sum/100, sum%100))
		reads := mappedReads("revenue-7d", d)
		sum, n = 0, 0
		for _, day := range reads {
			s, k := rawTotals(t, filepath.Join(data, "shop", "orders-"+day+".csv"))
			sum, n = sum+s, n+k
		}
		got, err = os.ReadFile(filepath.Join(data, "revenue-7d", d+".txt"))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("7 days to %s: %d orders, revenue %d.%02d EUR over %d day(s)\n", d, n, sum/100, sum%100, len(reads)), string(got))
	}
	for _, w := range weeks {
		reads := mappedReads("weekly-report", w)
		sum, n := 0, 0
		for _, day := range reads {
			s, k := rawTotals(t, filepath.Join(data, "shop", "orders-"+day+".csv"))
			sum, n = sum+s, n+k
		}
		got, err := os.ReadFile(filepath.Join(data, "weekly", w+".txt"))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("week %s (%s..%s): %d orders, revenue %d.%02d EUR\n", w, reads[0], reads[len(reads)-1], n, sum/100, sum%100), string(got))
	}

	// Each day's regions add up to the day (revenue-by-region: date ×
	// region, each region's chunk reading the day of orders-clean).
	for _, d := range days {
		sum, _ := rawTotals(t, filepath.Join(data, "shop", "orders-"+d+".csv"))
		total := 0
		for _, region := range regions {
			got, err := os.ReadFile(filepath.Join(data, "by-region", region, d+".txt"))
			require.NoError(t, err)
			var orders, units, cents int
			_, err = fmt.Sscanf(strings.SplitN(string(got), ": ", 2)[1], "%d orders, revenue %d.%d EUR", &orders, &units, &cents)
			require.NoError(t, err, "%s", got)
			require.Contains(t, string(got), "day "+d+", region "+region+":")
			total += units*100 + cents
		}
		require.Equal(t, sum, total, "the regions of %s add up to the day", d)
	}

	// The views agree.
	r = s.ok(t, "status")
	for _, ds := range allDatasets {
		require.Regexp(t, `(?m)^`+ds+`\s+\S+\s+30\s+30\s+0\s+0\s+0\s+0\s+2026-01-30$`, r.stdout)
	}
	require.Regexp(t, `(?m)^payments\s+0\s+0\s+-\s+-$`, r.stdout)
	require.Regexp(t, `(?m)^revenue-by-region\s+by-region\s+90\s+90\s+0\s+0\s+0\s+0\s+2026-01-30\|americas$`, r.stdout)
	require.Contains(t, r.stdout, "no live claims")
	r = s.ok(t, "status", "--dataset", "orders")
	require.Regexp(t, `(?m)^orders\s+extract\s+30\s+30\s`, r.stdout)
	require.NotContains(t, r.stdout, "orders-clean", "only the dataset asked for")
	r = s.ok(t, "chunks", "--limit", "0")
	require.Equal(t, 37, strings.Count(r.stdout, "\n"), "header, 5 weeks, 30 days, legend:\n%s", r.stdout)
	require.Contains(t, r.stdout, "2026-01-15  #         #       #             #             #               #           #                  .",
		"revenue-by-region: one mark for the date's three regions")
	require.Contains(t, r.stdout, "2026-W03    .         .       .             .             .               .           .                  #")
	r = s.ok(t, "graph", "--dataid", "2026-01-15")
	require.Contains(t, r.stdout, `"job:reconcile" -> "chunk:reconciliation/2026-01-15"`)
	r = s.ok(t, "graph", "--job", "rolling")
	require.Contains(t, r.stdout, `"dataset:orders-clean" -> "job:rolling" [label="READS TIME_WINDOW -6..0"]`)
	r = s.ok(t, "graph", "--job", "weekly", "--dataid", "2026-W03")
	for _, day := range mappedReads("weekly-report", "2026-W03") {
		require.Contains(t, r.stdout, `"chunk:orders-clean/`+day+`" -> "job:weekly" [label="READS DONE LOCAL_READ"]`)
	}
	r = s.ok(t, "graph", "--format", "mermaid")
	require.Contains(t, r.stdout, "flowchart LR")
	r = s.ok(t, "events", "--dataset", "orders-clean", "--dataid", "2026-01-15")
	require.Contains(t, r.stdout, `reason="lease expired"`)

	// A day's export was wrong: resubmitting it with cascade invalidates
	// what was computed from it, through the mappings too (the seven
	// rolling days and the one week that read it), and one runner re-runs
	// exactly that.
	before := len(s.events(t, client.EventFilter{}))
	r = s.ok(t, "resubmit", "--dataset", "orders", "--dataid", "2026-01-15", "--cascade")
	require.Regexp(t, `(?m)^weekly-report\s+2026-W03\s+weekly\s+RESUBMIT\s+upstream orders/2026-01-15 resubmitted$`, r.stdout)
	require.Equal(t, 15, strings.Count(r.stdout, "RESUBMIT"), "orders, reconciliation, orders-clean, daily-report, 7 rolling days, 1 week, 3 regions:\n%s", r.stdout)
	require.Regexp(t, `(?m)^revenue-by-region\s+2026-01-15\|emea\s+by-region\s+RESUBMIT\s`, r.stdout)
	rerun := start(t, append(append([]string{}, s.env...), env...), example,
		"run", "--keys-dir", keys, "--job", "extract", "--job", "transform", "--job", "report", "--job", "reconcile", "--job", "rolling", "--job", "weekly", "--job", "by-region",
		"--loop", "--idle-wait", "2s", "--", "sh", filepath.Join(mustAbs(t, "testdata"), "pause.sh"))
	require.Equal(t, 0, rerun.wait(t, 60*time.Second), "runner:\n%s", rerun.stderr)
	var again []string
	for _, e := range s.events(t, client.EventFilter{})[before:] {
		if e.Role == "OUTPUT" && e.To == "READY" {
			again = append(again, e.Dataset+"/"+e.DataID)
		}
	}
	slices.Sort(again)
	want := []string{"daily-report/2026-01-15", "orders-clean/2026-01-15", "orders/2026-01-15", "reconciliation/2026-01-15"}
	for _, d := range dates("2026-01-15", 7) {
		want = append(want, "revenue-7d/"+d)
	}
	want = append(want, "weekly-report/2026-W03")
	for _, region := range regions {
		want = append(want, "revenue-by-region/2026-01-15|"+region)
	}
	slices.Sort(want)
	require.Equal(t, want, again)
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	return abs
}

// dates returns n consecutive ISO dates from first.
func dates(first string, n int) []string {
	d, _ := time.Parse(time.DateOnly, first)
	out := make([]string, n)
	for i := range out {
		out[i] = d.AddDate(0, 0, i).Format(time.DateOnly)
	}
	return out
}

// rawTotals sums the well-formed rows of a raw export as the example jobs
// do: the amount in cents and the number of orders.
func rawTotals(t *testing.T, path string) (sum, n int) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ",")
		if len(fields) != 3 {
			continue
		}
		v, err := strconv.Atoi(fields[2])
		if err != nil {
			continue
		}
		sum += v
		n++
	}
	require.NoError(t, sc.Err())
	require.Positive(t, n)
	return sum, n
}
