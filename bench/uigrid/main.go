// Command uigrid measures the dashboard's partition grid in headless
// Chromium: it builds chunklock, serves it on the embedded store (etcd in a
// temporary directory) on a free port of 127.0.0.1, seeds 50 daily
// datasets over 365 days, opens /ui on that range five times and prints
// the median time until the grid is drawn, plus the size of the page's
// JavaScript. Run from the repository root:
//
//	go run ./bench/uigrid [-datasets 50] [-days 365] [-runs 5]
//
// It needs Debian's chromium (scripts/browser.sh) or CHUNKLOCK_CHROMIUM.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

func main() {
	datasets := flag.Int("datasets", 50, "datasets (half sources, half produced by a job each)")
	days := flag.Int("days", 365, "days per dataset")
	runs := flag.Int("runs", 5, "page loads to take the median of")
	flag.Parse()
	if err := run(*datasets, *days, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "uigrid:", err)
		os.Exit(1)
	}
}

func run(nDatasets, days, runs int) error {
	tmp, err := os.MkdirTemp("", "chunklock-uigrid-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "chunklock")
	build := exec.Command("go", "build", "-o", bin, "./cmd/chunklock")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building chunklock: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := exec.CommandContext(ctx, bin, "serve", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(tmp, "data"), "--log-level", "warn")
	stderr, err := srv.StderrPipe()
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { _ = srv.Process.Signal(os.Interrupt); _ = srv.Wait() }()
	base, err := serverURL(stderr)
	if err != nil {
		return err
	}

	start := time.Now().UTC().AddDate(0, 0, -days)
	from, to := start.Format("2006-01-02"), start.AddDate(0, 0, days-1).Format("2006-01-02")
	t0 := time.Now()
	if err := seed(base, nDatasets, from, to); err != nil {
		return fmt.Errorf("seeding: %w", err)
	}
	fmt.Printf("seeded %d datasets x %d days (%s .. %s) in %s\n", nDatasets, days, from, to, time.Since(t0).Round(time.Millisecond))

	browser := os.Getenv("CHUNKLOCK_CHROMIUM")
	if browser == "" {
		if browser, err = exec.LookPath("chromium"); err != nil {
			return fmt.Errorf("no chromium: run scripts/browser.sh or set CHUNKLOCK_CHROMIUM")
		}
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1400, 1000),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	page := base + "/ui#/?from=" + from + "&to=" + to
	var total, render []float64
	var cells int
	for i := 0; i < runs; i++ {
		v, err := loadGrid(bctx, page)
		if err != nil {
			return err
		}
		total = append(total, v["total"])
		render = append(render, v["render"])
		cells = int(v["cells"])
		fmt.Printf("run %d: grid ready %.0f ms after navigation (drawing %.0f ms), %d cells\n", i+1, v["total"], v["render"], cells)
	}
	js, err := os.ReadFile("ui/dist/dashboard.js")
	if err != nil {
		return err
	}
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	_, _ = w.Write(js)
	_ = w.Close()
	fmt.Printf("median of %d: grid of %d datasets x %d days (%d cells) ready %.0f ms after navigation (fetch + draw), drawing %.0f ms\n",
		runs, nDatasets, days, cells, median(total), median(render))
	fmt.Printf("dashboard.js: %d bytes, %d gzipped\n", len(js), gz.Len())
	return nil
}

// loadGrid opens page in a new tab and returns the grid's timings.
func loadGrid(bctx context.Context, page string) (map[string]float64, error) {
	tab, cancel := chromedp.NewContext(bctx)
	defer cancel()
	if err := chromedp.Do(tab, chromedp.Navigate(page)); err != nil {
		return nil, err
	}
	v, err := chromedp.Run(tab, chromedp.Poll[map[string]float64](
		`window.gridReadyAt && {total: window.gridReadyAt, render: +document.getElementById('grid').dataset.renderMs, cells: document.querySelectorAll('#grid i.c').length}`,
		chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil {
		return nil, fmt.Errorf("waiting for the grid: %w", err)
	}
	return v, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

var urlRe = regexp.MustCompile(`playground at (http://127\.0\.0\.1:\d+)`)

// serverURL reads the server's log until it names its address.
func serverURL(stderr interface{ Read([]byte) (int, error) }) (string, error) {
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := urlRe.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return m[1], nil
		}
	}
	return "", fmt.Errorf("chunklock serve ended before naming its address")
}

// seed makes n/2 source datasets, published over [from, to] (a few days
// held), and n/2 datasets each produced by a job from one source, with a
// stretch of chunks produced, one failed and one running.
func seed(base string, n int, from, to string) error {
	sources := n / 2
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("ds%02d", i)
		if _, err := gql(base, `mutation($id: String!, $start: String!) { upsertDataset(input: {id: $id, partitions: {kind: DAILY, start: $start, deadlineSeconds: 7200}}) { id } }`,
			map[string]any{"id": id, "start": from}); err != nil {
			return err
		}
	}
	for i := 0; i < sources; i++ {
		src := fmt.Sprintf("ds%02d", i)
		// Leave the last i days of each source missing (late).
		last := mustDate(to).AddDate(0, 0, -i).Format("2006-01-02")
		if _, err := gql(base, `mutation($d: String!, $f: String!, $t: String!) { publishRange(dataset: $d, from: $f, to: $t) { changed } }`,
			map[string]any{"d": src, "f": from, "t": last}); err != nil {
			return err
		}
	}
	for i := sources; i < n; i++ {
		job, out, in := fmt.Sprintf("job%02d", i), fmt.Sprintf("ds%02d", i), fmt.Sprintf("ds%02d", i-sources)
		if _, err := gql(base, `mutation($j: String!, $in: String!, $out: String!) { upsertJob(input: {id: $j, inputs: [$in], output: $out, maxAttempts: 1}) { job { id } } }`,
			map[string]any{"j": job, "in": in, "out": out}); err != nil {
			return err
		}
		for k := 0; k < 30; k++ {
			d, err := gql(base, `mutation($j: String!) { findNext(job: $j, executor: "bench") { token } }`, map[string]any{"j": job})
			if err != nil {
				return err
			}
			var c struct {
				FindNext *struct{ Token string } `json:"findNext"`
			}
			if err := json.Unmarshal(d, &c); err != nil || c.FindNext == nil {
				break
			}
			op := `mutation($t: String!) { complete(token: $t) }`
			switch {
			case k == 29:
				continue // left running
			case k%10 == 7:
				op = `mutation($t: String!) { fail(token: $t, reason: "bench failure") }`
			}
			if _, err := gql(base, op, map[string]any{"t": c.FindNext.Token}); err != nil {
				return err
			}
		}
	}
	return nil
}

func mustDate(s string) time.Time {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return t
}

func gql(base, query string, vars map[string]any) (json.RawMessage, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	resp, err := http.Post(base+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Data   json.RawMessage            `json:"data"`
		Errors []struct{ Message string } `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if len(out.Errors) > 0 {
		msgs := make([]string, len(out.Errors))
		for i, e := range out.Errors {
			msgs[i] = e.Message
		}
		return out.Data, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return out.Data, nil
}
