package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// The dashboard's first paint (ui/web/src/dashboard.ts, overview): the
// catalog (loadCatalog), then the grid's cells (loadCells); the partition
// summaries (loadSummaries) come after the grid is drawn. The documents
// are the dashboard's own. Every dataset here is HOURLY, so the default
// range is empty (the last 30 days only when a dataset is DAILY) and the
// grid reads each dataset's partitions from its start, 1,000 to a page,
// until it has 20,000 or none is left: ten datasets to a request, four
// requests at a time.
const (
	dashCatalogDoc = `{
    viewer { name role }
    datasets { id description partitions { kind deadlineSeconds } producer { id } }
    jobs { id inputs output paused maxAttempts }
    claims { token job dataid attempt executor fence leaseExpiresAt }
  }`
	dashSummariesDoc = `{ datasets { id partitionSummary { missing late truncated } } }`
	dashCellsField   = `d%d: partitions(dataset: %s, from: $from, to: $to, first: 1000%s) {
          edges { node { dataid status late } } pageInfo { hasNextPage endCursor } }`
)

// overview is what the dashboard's first paint cost.
type overview struct {
	catalog, cells, summaries time.Duration
	requests, cellsRead       int
}

func dashboardOverview(ctx context.Context, a *api) (overview, error) {
	var ov overview
	var cat struct {
		Datasets []struct{ ID string }
	}
	d, err := a.timed(ctx, dashCatalogDoc, nil, &cat)
	if err != nil {
		return ov, fmt.Errorf("dashboard catalog: %w", err)
	}
	ov.catalog = d
	t0 := time.Now()
	todo := make([]cellsTodo, len(cat.Datasets))
	for i, ds := range cat.Datasets {
		todo[i] = cellsTodo{dataset: ds.ID}
	}
	for len(todo) > 0 {
		if todo, err = readCellsRound(ctx, a, todo, &ov); err != nil {
			return ov, fmt.Errorf("dashboard cells: %w", err)
		}
	}
	ov.cells = time.Since(t0)
	if ov.summaries, err = a.timed(ctx, dashSummariesDoc, nil, nil); err != nil {
		// Kept: the time until the failure is the figure.
		return ov, fmt.Errorf("dashboard summaries: %w", err)
	}
	return ov, nil
}

// cellsTodo is a dataset whose cells the grid still reads, from after.
type cellsTodo struct {
	dataset, after string
	read           int
}

// readCellsRound reads one page of every dataset of todo, ten to a request,
// four requests at a time, and returns those with more to read.
func readCellsRound(ctx context.Context, a *api, todo []cellsTodo, ov *overview) ([]cellsTodo, error) {
	var batches [][]cellsTodo
	for i := 0; i < len(todo); i += 10 {
		batches = append(batches, todo[i:min(i+10, len(todo))])
	}
	var mu sync.Mutex
	var next []cellsTodo
	var first error
	work := make(chan []cellsTodo)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for b := range work {
				more, n, err := readCells(ctx, a, b)
				mu.Lock()
				next, ov.requests, ov.cellsRead = append(next, more...), ov.requests+1, ov.cellsRead+n
				first = cmpOr(first, err)
				mu.Unlock()
			}
		})
	}
	for _, b := range batches {
		work <- b
	}
	close(work)
	wg.Wait()
	return next, first
}

// readCells is one request of the grid: a page of each dataset of batch.
func readCells(ctx context.Context, a *api, batch []cellsTodo) ([]cellsTodo, int, error) {
	fields := make([]string, len(batch))
	for i, b := range batch {
		after := ""
		if b.after != "" {
			after = ", after: " + quoteJSON(b.after)
		}
		fields[i] = fmt.Sprintf(dashCellsField, i, quoteJSON(b.dataset), after)
	}
	var out map[string]struct {
		Edges    []json.RawMessage
		PageInfo struct {
			HasNextPage bool
			EndCursor   string
		}
	}
	doc := "query($from: String, $to: String) { " + strings.Join(fields, "\n") + " }"
	if err := a.do(ctx, doc, map[string]any{"from": nil, "to": nil}, &out); err != nil {
		return nil, 0, err
	}
	var more []cellsTodo
	n := 0
	for i, b := range batch {
		c := out[fmt.Sprintf("d%d", i)]
		b.read += len(c.Edges)
		n += len(c.Edges)
		if c.PageInfo.HasNextPage && b.read < 20000 {
			b.after = c.PageInfo.EndCursor
			more = append(more, b)
		}
	}
	return more, n, nil
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// statusCommand runs `chunklock status` against the server and returns
// its wall time and how many lines it printed.
func statusCommand(ctx context.Context, bin, url string, timeout time.Duration) (time.Duration, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "status", "--url", url)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	took := time.Since(t0)
	if ctx.Err() != nil {
		return took, 0, fmt.Errorf("chunklock status did not finish within %s (-status-timeout)", timeout)
	}
	if err != nil {
		return took, 0, fmt.Errorf("chunklock status: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	return took, strings.Count(out.String(), "\n"), nil
}
