package ui_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	pipelinefile "github.com/chunklock/chunklock/pipeline"
)

// seedQuickStart declares the README's quick start (examples/daily-pipeline,
// its pipeline.yaml as apply reads it), publishes the payments of
// 2026-01-01..30 but 2026-01-17, and plays its runners to the end: every
// job claims and completes whatever it can, lowest first, until nothing is
// claimable. keep names claims (job/dataid) left RUNNING; their tokens are
// returned by job/dataid.
func seedQuickStart(t *testing.T, s *stack, keep ...string) map[string]string {
	t.Helper()
	ctx := context.Background()
	p, err := pipelinefile.ParseFile("../examples/daily-pipeline/pipeline.yaml")
	require.NoError(t, err)
	for _, d := range p.Datasets {
		_, err := s.store.UpsertDataset(ctx, d.Backend())
		require.NoError(t, err)
	}
	for _, j := range p.OrderedJobs() {
		bj, err := j.Backend()
		require.NoError(t, err)
		_, err = s.store.UpsertJob(ctx, bj)
		require.NoError(t, err)
	}
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 30 {
		if id := day.AddDate(0, 0, i).Format(time.DateOnly); id != "2026-01-17" {
			_, err := s.store.Publish(ctx, "payments", id)
			require.NoError(t, err)
		}
	}
	kept := map[string]string{}
	for progress := true; progress; {
		progress = false
		for _, j := range p.OrderedJobs() {
			for {
				c, err := s.store.FindNext(ctx, j.ID, "quickstart-runner-1")
				require.NoError(t, err)
				if c == nil {
					break
				}
				progress = true
				if key := j.ID + "/" + c.DataID; slices.Contains(keep, key) {
					kept[key] = c.Token
					continue
				}
				require.NoError(t, s.store.Complete(ctx, c.Token))
			}
		}
	}
	require.Len(t, kept, len(keep), "every claim to keep was made")
	return kept
}

// drawn is what the page says the grid draws for a dataid of a dataset.
type drawn struct {
	Status string  `json:"status"`
	Late   bool    `json:"late"`
	Text   string  `json:"text"`
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
}

// cellOf is what the page says it draws for a dataid of a dataset, with
// the cell's centre in the window (its row scrolled into sight first).
func cellOf(t *testing.T, tb *tab, ds, id string) drawn {
	t.Helper()
	return eval[drawn](t, tb, fmt.Sprintf(`(() => {
		const row = document.querySelector('.grow[data-ds=%q]');
		if (row) { const b = row.getBoundingClientRect(); if (b.top < 0 || b.bottom > innerHeight) row.scrollIntoView({block: 'center'}); }
		return window.chunklock.cell(%q, %q) || {status: 'absent'};
	})()`, ds, ds, id))
}

// underCell is the class of the element drawn under a cell's centre: what
// the user sees there, not what the page's model says.
func underCell(t *testing.T, tb *tab, ds, id string) string {
	t.Helper()
	c := cellOf(t, tb, ds, id)
	return eval[string](t, tb, fmt.Sprintf(`(document.elementFromPoint(%f, %f) || {className: 'nothing'}).className`, c.X, c.Y))
}

// openOverview signs in and waits until the grid's rows in sight are drawn
// and the pipeline is laid out (after which nothing on the page moves).
func openOverview(t *testing.T, tb *tab, s *stack, role string) {
	t.Helper()
	signIn(t, tb, s, s.tokens[role])
	tb.poll(t, `document.querySelector('#grid[data-ready="1"]') && document.getElementById('pipeline-svg') && true`)
}

// TestQuickStartPipeline: the quick start after its runners finish. All
// eight datasets are drawn, the pipeline with its mappings on the edges;
// the grid opens on January 2026, where the data is (not the last 30
// days); the weekly row spans its days; the late payments day is marked;
// and reconcile's blocked day is two clicks away: the late cell, then what
// waits on it.
func TestQuickStartPipeline(t *testing.T) {
	s := newStack(t, false, "extract")
	seedQuickStart(t, s)
	tb := newTab(t)
	openOverview(t, tb, s, "reader")

	datasets := []string{"orders", "payments", "orders-clean", "daily-report", "reconciliation", "revenue-7d", "weekly-report", "revenue-by-region"}
	tb.poll(t, `document.querySelectorAll('#pipeline g.node.dataset').length === 8`)
	for _, ds := range datasets {
		require.Equal(t, 1, eval[int](t, tb, fmt.Sprintf(`document.querySelectorAll('#pipeline g.dataset[data-dataset=%q]').length`, ds)), ds)
		rows := 1
		if ds == "revenue-by-region" {
			rows = 3 // a row per region on the time axis
		}
		require.Equal(t, rows, eval[int](t, tb, fmt.Sprintf(`document.querySelectorAll('.grow[data-dataset=%q]').length`, ds)), "%s has its rows", ds)
	}
	require.Equal(t, 7, eval[int](t, tb, `document.querySelectorAll('#pipeline g.node.job').length`))
	labels := eval[string](t, tb, `Array.from(document.querySelectorAll('#pipeline .edge-label')).map(e => e.dataset.from + '>' + e.dataset.to + ': ' + e.textContent).sort().join('; ')`)
	require.Equal(t, "orders-clean>by-region: each region; orders-clean>rolling: -6..0 days; orders-clean>weekly: week of days", labels)
	require.LessOrEqual(t, eval[float64](t, tb, `document.getElementById('pipeline-svg').getBoundingClientRect().right`),
		eval[float64](t, tb, `document.documentElement.clientWidth`), "the graph fits the page")

	// The default range is where the data is.
	view := eval[map[string]any](t, tb, `(() => { const v = window.chunklock.view(); return {zoom: v.zoom, from: document.querySelector('#range [name=from]').value, to: document.querySelector('#range [name=to]').value}; })()`)
	require.Equal(t, "DAILY", view["zoom"])
	require.LessOrEqual(t, view["from"], "2026-01-01")
	require.GreaterOrEqual(t, view["to"], "2026-01-30")
	require.Less(t, view["to"], "2026-02-15")
	for _, id := range []string{"2026-01-01", "2026-01-16", "2026-01-30"} {
		require.Equal(t, "READY", cellOf(t, tb, "orders-clean", id).Status, id)
		require.Contains(t, underCell(t, tb, "orders-clean", id), "s-READY", id)
	}

	// The weekly row: 2026-W03 spans Monday 2026-01-12 to Sunday 2026-01-18.
	week := `document.querySelector('.grow[data-ds="weekly-report"] .seg[data-from="2026-W03"]')`
	require.Contains(t, eval[string](t, tb, week+`.className`), "s-READY")
	span := eval[[]float64](t, tb, `(() => { const w = `+week+`.getBoundingClientRect(); const a = window.chunklock.cell('orders', '2026-01-12'); const b = window.chunklock.cell('orders', '2026-01-18'); return [w.left, w.right, a.x, b.x]; })()`)
	require.Less(t, span[0], span[2], "the week starts before the middle of its Monday's column")
	require.Greater(t, span[1], span[3], "and ends after the middle of its Sunday's")
	require.Less(t, span[1]-span[0], (span[3]-span[2])*8/6, "and spans seven columns, not more")

	// The late payments day.
	late := cellOf(t, tb, "payments", "2026-01-17")
	require.Equal(t, drawn{Status: "NONE", Late: true, Text: "payments 2026-01-17: missing (late)", X: late.X, Y: late.Y}, late)
	require.Contains(t, underCell(t, tb, "payments", "2026-01-17"), "late")
	require.NotContains(t, underCell(t, tb, "payments", "2026-01-16"), "late")
	require.Contains(t, eval[string](t, tb, `document.querySelector('#pipeline g.dataset[data-dataset="payments"] .sub').textContent`), "1 late")
	tb.screenshot(t, "quickstart-overview")

	// Two clicks: the late day, then reconcile's chunk waiting on it.
	tb.do(t, chromedp.MouseClickXY(late.X, late.Y))
	tb.poll(t, `document.querySelector('#waits') && true`)
	require.Contains(t, eval[string](t, tb, `document.querySelector('#waits').innerText`), "INPUT_NOT_READY payments 2026-01-17")
	tb.do(t, chromedp.Click(chromedp.CSS(`#waits a[href="#/chunk/reconciliation/2026-01-17"]`)))
	tb.poll(t, `location.hash === '#/chunk/reconciliation/2026-01-17' && document.querySelector('#blockers') && true`)
	blockers := eval[string](t, tb, `document.querySelector('#blockers').innerText`)
	require.Contains(t, blockers, "INPUT_NOT_READY")
	require.Contains(t, blockers, "payments 2026-01-17")
	tb.screenshot(t, "quickstart-blocked")
}

// TestQuickStartChunkRowsAndConsumers: a chunk's page tells apart the
// INPUT rows a job holds on it for each of its outputs (rolling reads a day
// of orders-clean for seven days of revenue-7d: seven rows, "read for"
// each of them, as are its locks), and lists downstream only the chunks
// that wait: those produced from it already are named in a line.
func TestQuickStartChunkRowsAndConsumers(t *testing.T) {
	s := newStack(t, false, "extract")
	seedQuickStart(t, s)
	tb := newTab(t)
	openOverview(t, tb, s, "reader")

	tb.do(t, chromedp.Navigate(s.url+"/ui#/chunk/orders-clean/2026-01-20"))
	tb.poll(t, `document.querySelector('#rows') && document.querySelector('#locks') && true`)
	head := eval[string](t, tb, `document.querySelector('#rows tr').innerText`)
	require.Contains(t, head, "read for")
	readFor := func(table string) []string {
		return eval[[]string](t, tb, fmt.Sprintf(`Array.from(document.querySelectorAll('#%s tr')).filter(r => r.innerText.includes('rolling')).map(r => {
			const a = r.querySelector('a'); return a ? a.textContent : '';
		})`, table))
	}
	want := []string{}
	for d := 20; d <= 26; d++ {
		want = append(want, fmt.Sprintf("revenue-7d 2026-01-%d", d))
	}
	require.ElementsMatch(t, want, readFor("rows"), "rolling's seven INPUT rows, each for its day of revenue-7d")
	require.ElementsMatch(t, want, readFor("locks"))
	mapped := eval[string](t, tb, `document.querySelector('#waits-mapped').innerText`)
	for _, j := range []string{"rolling", "weekly", "by-region"} {
		require.Contains(t, mapped, j+" (", "the consumers through a mapping are named")
	}
	tb.screenshot(t, "quickstart-chunk-rows")

	// payments 2026-01-16 was reconciled: nothing waits on it.
	tb.do(t, chromedp.Navigate(s.url+"/ui#/chunk/payments/2026-01-16"))
	tb.poll(t, `(document.querySelector('section.chunk h2') || {innerText: ''}).innerText.includes('payments') && document.querySelector('#waits-produced') && true`)
	require.Contains(t, eval[string](t, tb, `document.querySelector('#waits-produced').innerText`), "reconciliation 2026-01-16")
	require.Equal(t, 0, eval[int](t, tb, `document.querySelectorAll('#waits').length`))
	require.Equal(t, 1, eval[int](t, tb, `document.querySelectorAll('#waits-none').length`))
}

// TestQuickStartDatasetPage: a dataset's page draws its whole history as
// runs, lists its missing and late partitions, and names its producer and
// consumers with their mappings.
func TestQuickStartDatasetPage(t *testing.T) {
	s := newStack(t, false, "extract")
	seedQuickStart(t, s)
	tb := newTab(t)
	openOverview(t, tb, s, "reader")
	tb.do(t, chromedp.Click(chromedp.CSS(`.grow[data-ds="payments"] .glabel a`)))
	tb.poll(t, `window.stripReadyAt && true`)
	strip := eval[map[string]string](t, tb, `({runs: document.getElementById('strip').dataset.runs, count: document.getElementById('strip').dataset.count,
		note: document.getElementById('strip-note').textContent, segs: Array.from(document.querySelectorAll('#strip .seg')).map(s => s.dataset.from + '..' + s.dataset.to + ' ' + s.className).join(', ')})`)
	require.Equal(t, "3", strip["runs"])
	require.Equal(t, "30", strip["count"])
	require.Equal(t, "2026-01-01..2026-01-16 seg s-READY block, 2026-01-17..2026-01-17 seg s-NONE late block, 2026-01-18..2026-01-30 seg s-READY block", strip["segs"])
	require.Contains(t, strip["note"], "29 READY, 1 missing; 1 late")
	require.Contains(t, eval[string](t, tb, `document.querySelector('section.dataset').innerText`), "read by reconcile")
	tb.poll(t, `document.querySelector('.ids a.id.late') && true`)
	require.Equal(t, "2026-01-17", eval[string](t, tb, `document.querySelector('.ids a.id.late').textContent`))
	tb.screenshot(t, "quickstart-dataset")

	tb.do(t, chromedp.Navigate(s.url+"/ui#/dataset/revenue-7d"))
	tb.poll(t, `document.querySelector('section.dataset[data-dataset="revenue-7d"]') && true`)
	require.Contains(t, eval[string](t, tb, `document.querySelector('section.dataset').innerText`), "produced by rolling from orders-clean -6..0 days")
	require.True(t, strings.HasPrefix(eval[string](t, tb, `location.hash`), "#/dataset/"))
}
