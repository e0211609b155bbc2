package ui_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// pipeline is the seeded pipeline of the dashboard tests: a daily source
// raw (deadline one hour, so its missing past days are late), job clean
// (raw -> cleaned) and job report (cleaned -> summary), over the last
// seven days d[0] .. d[6] (d[6] is today).
type pipeline struct {
	d [7]string
}

func seedPipeline(t *testing.T, s *stack, admin string) pipeline {
	t.Helper()
	var p pipeline
	now := time.Now().UTC()
	for i := range p.d {
		p.d[i] = now.AddDate(0, 0, i-6).Format("2006-01-02")
	}
	def := fmt.Sprintf(`{kind: DAILY, start: %q}`, p.d[0])
	s.must(t, admin, fmt.Sprintf(`mutation {
		a: upsertDataset(input: {id: "raw", description: "landed files", partitions: {kind: DAILY, start: %q, deadlineSeconds: 3600}}) { id }
		b: upsertDataset(input: {id: "cleaned", partitions: %s}) { id }
		c: upsertDataset(input: {id: "summary", partitions: %s}) { id }
	}`, p.d[0], def, def), nil)
	s.must(t, admin, `mutation {
		a: upsertJob(input: {id: "clean", inputs: ["raw"], output: "cleaned", maxAttempts: 3}) { job { id } }
		b: upsertJob(input: {id: "report", inputs: ["cleaned"], output: "summary"}) { job { id } }
	}`, nil)
	for _, d := range p.d[:4] {
		s.must(t, admin, `mutation($d: String!) { publish(dataset: "raw", dataid: $d) { status } }`, map[string]any{"d": d})
	}
	// clean: d0 and d1 READY, d2 FAILED, d3 RUNNING.
	for i := 0; i < 4; i++ {
		tok := s.claim(t, admin, "clean", p.d[i])
		switch i {
		case 0, 1:
			s.must(t, admin, `mutation($t: String!) { complete(token: $t) }`, map[string]any{"t": tok})
		case 2:
			s.must(t, admin, `mutation($t: String!) { fail(token: $t, reason: "bad rows: 17 of 2000 lack an id") }`, map[string]any{"t": tok})
		}
	}
	// report: d0 READY.
	s.must(t, admin, `mutation($t: String!) { complete(token: $t) }`, map[string]any{"t": s.findNext(t, admin, "report")})
	return p
}

// day is the date n days after d[0].
func (p pipeline) day(n int) string {
	d, err := time.Parse("2006-01-02", p.d[0])
	if err != nil {
		panic(err)
	}
	return d.AddDate(0, 0, n).Format("2006-01-02")
}

// claim claims one chunk of job and returns the claim's token.
func (s *stack) claim(t *testing.T, role, job, dataid string) string {
	t.Helper()
	data := s.must(t, role, `mutation($j: String!, $d: String!) { claim(job: $j, dataid: $d, executor: "test-runner-1") { token } }`, map[string]any{"j": job, "d": dataid})
	return data["claim"].(map[string]any)["token"].(string)
}

// findNext claims the next chunk of job and returns the claim's token.
func (s *stack) findNext(t *testing.T, role, job string) string {
	t.Helper()
	data := s.must(t, role, `mutation($j: String!) { findNext(job: $j, executor: "test-runner-1") { token dataid } }`, map[string]any{"j": job})
	claim, ok := data["findNext"].(map[string]any)
	require.True(t, ok, "findNext(%s) claimed nothing", job)
	return claim["token"].(string)
}

// signIn opens the dashboard and signs in with token through its form.
func signIn(t *testing.T, tb *tab, s *stack, token string) {
	t.Helper()
	tb.do(t,
		chromedp.Navigate(s.url+"/ui"),
		chromedp.WaitVisible(chromedp.CSS(`#token-input`)),
		chromedp.SendKeys(chromedp.CSS(`#token-input`), token),
		chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)),
	)
	tb.poll(t, `document.querySelector('#grid[data-ready="1"]') && true`)
}

// cellStatus reads the status the grid shows for a chunk.
func cellStatus(t *testing.T, tb *tab, ds, id string) string {
	t.Helper()
	return eval[string](t, tb, fmt.Sprintf(`(document.querySelector('#grid i.c[data-ds=%q][data-id=%q]') || {dataset: {st: 'absent'}}).dataset.st`, ds, id))
}

// waitCell waits until the grid shows a chunk in status.
func waitCell(t *testing.T, tb *tab, ds, id, status string) {
	t.Helper()
	tb.poll(t, fmt.Sprintf(`(document.querySelector('#grid i.c[data-ds=%q][data-id=%q]') || {dataset: {}}).dataset.st === %q`, ds, id, status))
}

// TestGridShowsSeededStatuses: every chunk of the seeded pipeline shows in
// the grid with its status, missing chunks as NONE and late ones marked.
func TestGridShowsSeededStatuses(t *testing.T) {
	s := newStack(t, false, "report")
	p := seedPipeline(t, s, "admin")
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["admin"])
	want := map[string][7]string{
		"raw":     {"READY", "READY", "READY", "READY", "NONE", "NONE", "NONE"},
		"cleaned": {"READY", "READY", "FAILED", "RUNNING", "NONE", "NONE", "NONE"},
		"summary": {"READY", "NONE", "NONE", "NONE", "NONE", "NONE", "NONE"},
	}
	for ds, sts := range want {
		for i, st := range sts {
			require.Equal(t, st, cellStatus(t, tb, ds, p.d[i]), "%s %s", ds, p.d[i])
		}
	}
	// raw's missing past days are late (deadline one hour after the day);
	// today is not over yet.
	late := func(ds, id string) bool {
		return eval[bool](t, tb, fmt.Sprintf(`document.querySelector('#grid i.c[data-ds=%q][data-id=%q]').classList.contains('late')`, ds, id))
	}
	require.True(t, late("raw", p.d[4]))
	require.True(t, late("raw", p.d[5]))
	require.False(t, late("raw", p.d[6]))
	require.False(t, late("raw", p.d[3]))
	// The pipeline draws both jobs, clean with its one live claim.
	require.Equal(t, "1", eval[string](t, tb, `document.querySelector('g.job[data-job="clean"] .badge').dataset.live`))
	require.Equal(t, "0", eval[string](t, tb, `document.querySelector('g.job[data-job="report"] .badge').dataset.live`))
	// The live claims table lists the executor.
	require.Contains(t, eval[string](t, tb, `document.querySelector('#claims').innerText`), "test-runner-1")
	// Each dataset counts its missing and late chunks over all time (raw:
	// d4 and d5, both late; today is not due), beside the grid range's
	// counts by status, and says which is which.
	allTime := func(ds string) string {
		return tb.poll(t, fmt.Sprintf(`(() => { const e = document.querySelector('g.dataset[data-dataset=%q] .all-time'); return e && e.dataset.missing + '/' + e.dataset.late })()`, ds))
	}
	require.Equal(t, "2/2", allTime("raw"))
	require.Equal(t, "2/0", allTime("cleaned"))
	require.Equal(t, "5/0", allTime("summary"))
	pills := `Array.from(document.querySelectorAll('g.dataset[data-dataset="raw"] .pill')).map(p => p.dataset.status + ':' + p.textContent.split(/\D/)[0]).join(' ')`
	require.Equal(t, "READY:4 NONE:3", eval[string](t, tb, pills))
	require.Contains(t, eval[string](t, tb, `document.getElementById('pipeline-note').textContent`), "from "+eval[string](t, tb, `document.querySelector('#range input[name=from]').value`))
	tb.screenshot(t, "grid")

	// A range before the pipeline's first day: no chunk is counted in it,
	// the all-time counts stay.
	tb.do(t, chromedp.Navigate(s.url+"/ui#/?from="+p.day(-60)+"&to="+p.day(-31)))
	tb.poll(t, fmt.Sprintf(`(document.querySelector('#range input[name=from]') || {}).value === %q`, p.day(-60)))
	tb.poll(t, `document.querySelectorAll('g.dataset[data-dataset="raw"] .pill').length === 0`)
	require.Equal(t, "2/2", allTime("raw"))
}

// TestCompleteRecoloursLive: a runner's complete turns its cell READY in
// a grid that stays loaded (no reload: a marker set on the page survives),
// through the events subscription.
func TestCompleteRecoloursLive(t *testing.T) {
	s := newStack(t, false, "report")
	p := seedPipeline(t, s, "admin")
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["reader"])
	tb.poll(t, `document.getElementById('live').textContent === 'live'`)
	require.Equal(t, "NONE", cellStatus(t, tb, "summary", p.d[1]))
	eval[bool](t, tb, `window.__sameLoad = true`)

	tok := s.findNext(t, "runner", "report") // summary d1: cleaned d1 is READY
	waitCell(t, tb, "summary", p.d[1], "RUNNING")
	s.must(t, "runner", `mutation($t: String!) { complete(token: $t) }`, map[string]any{"t": tok})
	waitCell(t, tb, "summary", p.d[1], "READY")
	require.True(t, eval[bool](t, tb, `window.__sameLoad === true`), "the page was reloaded")
}

// TestResubmitCascadeFromChunkPage: an admin resubmits cleaned d0 with
// cascade from its chunk page (confirming the dialog); the grid then shows
// cleaned d0 and the summary d0 computed from it RESUBMIT.
func TestResubmitCascadeFromChunkPage(t *testing.T) {
	s := newStack(t, false, "report")
	p := seedPipeline(t, s, "admin")
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["admin"])
	tb.poll(t, `document.getElementById('live').textContent === 'live'`)
	require.Equal(t, "READY", cellStatus(t, tb, "summary", p.d[0]))
	eval[bool](t, tb, `window.__sameLoad = true`)

	tb.do(t, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#grid i.c[data-ds="cleaned"][data-id=%q]`, p.d[0]))))
	tb.poll(t, `document.querySelector('section.chunk') && document.querySelector('#events') && true`)
	page := eval[string](t, tb, `document.querySelector('section.chunk').innerText`)
	require.Contains(t, page, "Status rows")
	require.Contains(t, page, "GLOBAL_WRITE") // READY: producers may not write it
	require.Contains(t, page, "RUNNING → READY")
	require.Equal(t, 1, eval[int](t, tb, `document.querySelectorAll('#lockgraph').length`))
	tb.screenshot(t, "chunk")

	tb.do(t,
		chromedp.Click(chromedp.CSS(`#actions button[data-action="resubmit-cascade"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-ok`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
	)
	tb.poll(t, `document.getElementById('chunk-status') && document.getElementById('chunk-status').textContent === 'RESUBMIT'`)
	tb.do(t, chromedp.Click(chromedp.CSS(`a[href="#/"]`)))
	waitCell(t, tb, "cleaned", p.d[0], "RESUBMIT")
	waitCell(t, tb, "summary", p.d[0], "RESUBMIT")
	require.True(t, eval[bool](t, tb, `window.__sameLoad === true`), "the page was reloaded")

	// The server agrees.
	data := s.must(t, "reader", `query($d: String!) { chunk(dataset: "summary", dataid: $d) { status } }`, map[string]any{"d": p.d[0]})
	require.Equal(t, "RESUBMIT", data["chunk"].(map[string]any)["status"])
}

// TestReaderSeesNoActions: a reader's pages carry no action button, and
// an action forged from the reader's page is refused by the server.
func TestReaderSeesNoActions(t *testing.T) {
	s := newStack(t, false, "report")
	p := seedPipeline(t, s, "admin")
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["reader"])
	require.Equal(t, "reader", eval[string](t, tb, `document.getElementById('role').textContent`))
	buttons := `document.querySelectorAll('[data-action], #actions, #range-op').length`
	require.Equal(t, 0, eval[int](t, tb, buttons))

	tb.do(t, chromedp.Navigate(s.url+"/ui#/chunk/cleaned/"+p.d[0]))
	tb.poll(t, `document.querySelector('section.chunk') && true`)
	require.Equal(t, 0, eval[int](t, tb, buttons))
	tb.do(t, chromedp.Navigate(s.url+"/ui#/job/clean"))
	tb.poll(t, `document.querySelector('#failures') && true`)
	require.Contains(t, eval[string](t, tb, `document.querySelector('#failures').innerText`), "bad rows: 17 of 2000 lack an id")
	require.Equal(t, 0, eval[int](t, tb, buttons))

	// The same request the admin's button sends, with the reader's token.
	code := tb.poll(t, fmt.Sprintf(`fetch('/graphql', {method: 'POST',
		headers: {'Content-Type': 'application/json', 'Authorization': 'Bearer ' + localStorage.getItem('chunklock.token')},
		body: JSON.stringify({query: 'mutation { resubmit(dataset: "cleaned", dataid: %q, cascade: true) { status } }'})})
		.then(r => r.json()).then(b => b.errors ? b.errors[0].extensions.code : 'ACCEPTED')`, p.d[0]))
	require.Equal(t, "FORBIDDEN", code)
	data := s.must(t, "reader", `query($d: String!) { chunk(dataset: "cleaned", dataid: $d) { status } }`, map[string]any{"d": p.d[0]})
	require.Equal(t, "READY", data["chunk"].(map[string]any)["status"])
}

// TestViewer: the viewer query names the caller and its role.
func TestViewer(t *testing.T) {
	s := newStack(t, false, "report")
	for _, role := range []string{"admin", "reader", "runner"} {
		data := s.must(t, role, `{ viewer { name role jobs } }`, nil)
		v := data["viewer"].(map[string]any)
		require.Equal(t, role, v["name"])
		require.Equal(t, role, v["role"])
	}
	data := s.must(t, "runner", `{ viewer { jobs } }`, nil)
	require.Equal(t, []any{"report"}, data["viewer"].(map[string]any)["jobs"])
	open := newStack(t, true)
	data = open.must(t, "", `{ viewer { name role } }`, nil)
	require.Equal(t, map[string]any{"name": "anonymous", "role": "admin"}, data["viewer"])
}

// TestJobFailuresFromEvents: a job's page lists its failures from the
// event log with their reasons, newest first, including one whose chunk
// has been produced since (so no status row shows it any more), and a new
// one as it happens.
func TestJobFailuresFromEvents(t *testing.T) {
	s := newStack(t, false, "report")
	p := seedPipeline(t, s, "admin")
	// cleaned d2 failed (seed), is resubmitted and produced: READY now.
	s.must(t, "admin", `mutation($d: String!) { resubmit(dataset: "cleaned", dataid: $d) { status } }`, map[string]any{"d": p.d[2]})
	s.must(t, "admin", `mutation($t: String!) { complete(token: $t) }`, map[string]any{"t": s.claim(t, "admin", "clean", p.d[2])})

	tb := newTab(t)
	signIn(t, tb, s, s.tokens["reader"])
	tb.poll(t, `document.getElementById('live').textContent === 'live'`)
	tb.do(t, chromedp.Navigate(s.url+"/ui#/job/clean"))
	tb.poll(t, `document.querySelector('#failures') && true`)
	failures := eval[string](t, tb, `document.querySelector('#failures').innerText`)
	require.Contains(t, failures, "bad rows: 17 of 2000 lack an id")
	require.Contains(t, failures, p.d[2])
	require.Equal(t, 0, eval[int](t, tb, `document.querySelectorAll('#failing').length`), "no chunk of clean is FAILED or HOLD now")

	// A hold while the page is open shows at the top, without a reload.
	eval[bool](t, tb, `window.__sameLoad = true`)
	s.must(t, "admin", `mutation($d: String!) { hold(dataset: "cleaned", dataid: $d, reason: "partner file truncated") { status } }`, map[string]any{"d": p.d[1]})
	first := tb.poll(t, `(() => { const r = document.querySelectorAll('#failures tr')[1]; return r && r.innerText.includes('partner file truncated') && r.innerText })()`)
	require.Contains(t, first, p.d[1])
	require.Contains(t, first, "HOLD")
	require.Contains(t, eval[string](t, tb, `document.querySelectorAll('#failures tr')[2].innerText`), "bad rows")
	require.Contains(t, eval[string](t, tb, `document.querySelector('#failing').innerText`), "partner file truncated")
	require.True(t, eval[bool](t, tb, `window.__sameLoad === true`), "the page was reloaded")
}

// TestShiftClickRange: an admin shift-clicks two cells of one row; the
// range form takes that dataset and range, and a publish over it (once
// confirmed) turns the cells READY.
func TestShiftClickRange(t *testing.T) {
	s := newStack(t, false, "report")
	p := seedPipeline(t, s, "admin")
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["admin"])
	tb.poll(t, `document.getElementById('live').textContent === 'live'`)
	shiftClick := func(ds, id string) {
		eval[bool](t, tb, fmt.Sprintf(`document.querySelector('#grid i.c[data-ds=%q][data-id=%q]').dispatchEvent(new MouseEvent('click', {bubbles: true, shiftKey: true}))`, ds, id))
	}
	shiftClick("raw", p.d[6])
	shiftClick("raw", p.d[4])
	form := func(name string) string {
		return eval[string](t, tb, fmt.Sprintf(`document.querySelector('#range-op [name=%q]').value`, name))
	}
	require.Equal(t, "raw", form("dataset"))
	require.Equal(t, p.d[4], form("from"))
	require.Equal(t, p.d[6], form("to"))
	require.Equal(t, "raw "+p.d[4]+" raw "+p.d[5]+" raw "+p.d[6], eval[string](t, tb, `Array.from(document.querySelectorAll('#grid i.c.sel')).map(e => e.dataset.ds + ' ' + e.dataset.id).join(' ')`))
	require.Equal(t, "#/", eval[string](t, tb, `location.hash || '#/'`), "a shift-click does not open the chunk")

	tb.do(t,
		chromedp.Click(chromedp.CSS(`#range-op button[data-action="range"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-ok`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
	)
	for _, d := range p.d[4:] {
		waitCell(t, tb, "raw", d, "READY")
	}
	require.Contains(t, tb.poll(t, `document.getElementById('range-result').textContent`), "3 changed")
	require.Equal(t, "READY", cellStatus(t, tb, "raw", p.d[3]))
}

// TestLateMarkedLive: lateness comes with the clock, not with an event. The
// grid times the next cell to turn late (raw's today, an hour after the
// day ends), and a chunk held past its deadline shows late without a
// reload.
func TestLateMarkedLive(t *testing.T) {
	s := newStack(t, false, "report")
	p := seedPipeline(t, s, "admin")
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["reader"])
	tb.poll(t, `document.getElementById('live').textContent === 'live'`)
	eval[bool](t, tb, `window.__sameLoad = true`)
	today, err := time.Parse("2006-01-02", p.d[6])
	require.NoError(t, err)
	want := today.AddDate(0, 0, 1).Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
	require.Equal(t, want, tb.poll(t, `document.getElementById('grid').dataset.nextLate`))

	lateClass := fmt.Sprintf(`document.querySelector('#grid i.c[data-ds="raw"][data-id=%q]').classList.contains('late')`, p.d[1])
	require.False(t, eval[bool](t, tb, lateClass))
	s.must(t, "admin", `mutation($d: String!) { hold(dataset: "raw", dataid: $d, reason: "checksum mismatch") { status } }`, map[string]any{"d": p.d[1]})
	waitCell(t, tb, "raw", p.d[1], "HOLD")
	tb.poll(t, lateClass)
	require.True(t, eval[bool](t, tb, `window.__sameLoad === true`), "the page was reloaded")
}
