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

// The dashboard's first paint (ui/web/src/views/overview.ts and rows.ts):
// the catalog, then the grid's cells, then the partition summaries, which
// come after the grid is drawn. The grid reads runs of one status
// (partitionRuns) over each dataset's history from its start, as the
// dashboard does, at most 4,000 dataids to a field and four fields to a
// request (a request's cost stays under the default limit), four requests
// at a time, until it has 20,000 dataids of each or none is left.
const (
	dashCatalogDoc = `{
    viewer { name role }
    datasets { id description partitions { kind deadlineSeconds } producer { id } }
    jobs { id inputs output paused maxAttempts }
    claims { token job dataid attempt executor fence leaseExpiresAt }
  }`
	dashSummariesDoc = `{ datasets { id partitionSummary { missing late truncated } } }`
	dashCellsField   = `d%d: partitionRuns(dataset: %s, from: %s, limit: 4000) {
          count next changesAt runs { from to count status late } }`
	dashFieldsPerRequest = 4
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

// readCellsRound reads one part of every dataset of todo, four to a
// request, four requests at a time, and returns those with more to read.
func readCellsRound(ctx context.Context, a *api, todo []cellsTodo, ov *overview) ([]cellsTodo, error) {
	var batches [][]cellsTodo
	for i := 0; i < len(todo); i += dashFieldsPerRequest {
		batches = append(batches, todo[i:min(i+dashFieldsPerRequest, len(todo))])
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

// readCells is one request of the grid: a part of each dataset of batch.
func readCells(ctx context.Context, a *api, batch []cellsTodo) ([]cellsTodo, int, error) {
	fields := make([]string, len(batch))
	for i, b := range batch {
		from := "null"
		if b.after != "" {
			from = quoteJSON(b.after)
		}
		fields[i] = fmt.Sprintf(dashCellsField, i, quoteJSON(b.dataset), from)
	}
	var out map[string]struct {
		Count int
		Next  *string
		Runs  []json.RawMessage
	}
	doc := "{ " + strings.Join(fields, "\n") + " }"
	if err := a.do(ctx, doc, nil, &out); err != nil {
		return nil, 0, err
	}
	var more []cellsTodo
	n := 0
	for i, b := range batch {
		c := out[fmt.Sprintf("d%d", i)]
		b.read += c.Count
		n += c.Count
		if c.Next != nil && b.read < 20000 {
			b.after = *c.Next
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
