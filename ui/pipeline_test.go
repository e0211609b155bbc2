package ui_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// TestPipelineOf500Datasets: a catalog of 500 daily datasets (250 sources,
// each read by a job writing another) is laid out and stays usable: the
// search lights the datasets it finds and dims the rest, the status
// filter lights those with failures, focus keeps one dataset's upstream
// and downstream, and the zoom buttons zoom.
func TestPipelineOf500Datasets(t *testing.T) {
	s := newStack(t, false, "load-ds001")
	ctx := context.Background()
	start := time.Now().UTC().AddDate(0, 0, -10).Format(time.DateOnly)
	def := partition.Def{Kind: partition.Daily, Start: start}
	for i := range 500 {
		_, err := s.store.UpsertDataset(ctx, backends.Dataset{ID: fmt.Sprintf("ds%03d", i), Location: "/lake/{dataid}", Partitions: &def})
		require.NoError(t, err)
	}
	for i := 1; i < 500; i += 2 {
		_, err := s.store.UpsertJob(ctx, backends.Job{ID: fmt.Sprintf("load-ds%03d", i), Inputs: []string{fmt.Sprintf("ds%03d", i-1)}, Output: fmt.Sprintf("ds%03d", i), MaxAttempts: 3, RetryDelaySeconds: 3600})
		require.NoError(t, err)
	}
	_, err := s.store.Publish(ctx, "ds120", start)
	require.NoError(t, err)
	c, err := s.store.Claim(ctx, "load-ds121", start, "runner-1")
	require.NoError(t, err)
	require.NoError(t, s.store.Fail(ctx, c.Token, "bad input"))

	tb := newTab(t)
	openOverview(t, tb, s, "reader")
	require.Equal(t, 500, eval[int](t, tb, `document.querySelectorAll('#pipeline g.node.dataset').length`))
	require.Equal(t, 250, eval[int](t, tb, `document.querySelectorAll('#pipeline g.node.job').length`))
	lit := `Array.from(document.querySelectorAll('#pipeline g.node.dataset:not(.dim)')).map(g => g.dataset.dataset).sort().join(' ')`

	tb.do(t, chromedp.SendKeys(chromedp.CSS(`#pipeline-search`), "ds12"))
	require.Equal(t, "ds120 ds121 ds122 ds123 ds124 ds125 ds126 ds127 ds128 ds129", tb.poll(t, `(() => { const l = `+lit+`; return l.split(' ').length === 10 && l; })()`))
	tb.do(t, chromedp.SendKeys(chromedp.CSS(`#pipeline-search`), "1"))
	require.Equal(t, "ds121", tb.poll(t, `(() => { const l = `+lit+`; return l.split(' ').length === 1 && l; })()`))
	tb.do(t, chromedp.Click(chromedp.CSS(`#pipeline-focus`)))
	tb.poll(t, `document.querySelectorAll('#pipeline g.node.dataset').length === 2`)
	require.Equal(t, "ds120 ds121", eval[string](t, tb, `Array.from(document.querySelectorAll('#pipeline g.node.dataset')).map(g => g.dataset.dataset).sort().join(' ')`), "ds121 and its upstream")
	tb.screenshot(t, "pipeline-focus")
	tb.do(t, chromedp.Click(chromedp.CSS(`#pipeline-all`)))
	tb.poll(t, `document.querySelectorAll('#pipeline g.node.dataset').length === 500`)

	eval[bool](t, tb, `(() => { const s = document.getElementById('pipeline-search'); s.value = ''; s.dispatchEvent(new Event('input')); return true; })()`)
	eval[bool](t, tb, `(() => { const f = document.getElementById('pipeline-filter'); f.value = 'failing'; f.dispatchEvent(new Event('change')); return true; })()`)
	require.Equal(t, "ds121", tb.poll(t, `(() => { const l = `+lit+`; return l.split(' ').length === 1 && l; })()`))

	scale := func() float64 { return eval[float64](t, tb, `+document.getElementById('pipeline-svg').dataset.scale`) }
	before := scale()
	tb.do(t, chromedp.Click(chromedp.CSS(`#pipeline-tools button[title="zoom in"]`)))
	require.InDelta(t, before*1.25, scale(), 0.01)
	tb.screenshot(t, "pipeline-500")
}
