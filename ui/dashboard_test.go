package ui_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// pipeline is the seeded pipeline of the dashboard tests: a daily source
// raw (deadline one second, so its missing past days are late whatever
// the hour of the run: with an hour, yesterday was not late yet before
// 01:00 UTC), job clean
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
		a: upsertDataset(input: {id: "raw", description: "landed files", partitions: {kind: DAILY, start: %q, deadlineSeconds: 1}}) { id }
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
	tb.poll(t, `document.querySelector('#grid[data-ready="1"]') && document.getElementById('pipeline-svg') && true`)
}

// cellStatus reads the status the grid shows for a chunk ("absent" when
// it shows none).
func cellStatus(t *testing.T, tb *tab, ds, id string) string {
	t.Helper()
	return cellOf(t, tb, ds, id).Status
}

// waitCell waits until the grid shows a chunk in status.
func waitCell(t *testing.T, tb *tab, ds, id, status string) {
	t.Helper()
	tb.poll(t, fmt.Sprintf(`(window.chunklock.cell(%q, %q) || {}).status === %q`, ds, id, status))
}

// clickCell clicks the middle of a chunk's cell, as a user does.
func clickCell(t *testing.T, tb *tab, ds, id string) {
	t.Helper()
	c := cellOf(t, tb, ds, id)
	require.NotEqual(t, "absent", c.Status, "%s %s is not drawn", ds, id)
	tb.do(t, chromedp.MouseClickXY(c.X, c.Y))
}

// TestGridShowsSeededStatuses: every chunk of the seeded pipeline shows in
// the grid with its status, missing chunks as NONE and late ones marked;
// the pipeline counts them over the grid's columns, the dataset's page
// counts missing and late over all time.
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
			if i == 6 {
				st = "" // today is not due: nothing expected yet
			}
			require.Equal(t, st, cellStatus(t, tb, ds, p.d[i]), "%s %s", ds, p.d[i])
			if st != "" {
				require.Contains(t, underCell(t, tb, ds, p.d[i]), "s-"+st, "drawn under %s %s", ds, p.d[i])
			}
		}
	}
	// raw's missing past days are late (deadline a second after the day:
	// at any hour of the run, yesterday is late and today is not due).
	require.True(t, cellOf(t, tb, "raw", p.d[4]).Late)
	require.True(t, cellOf(t, tb, "raw", p.d[5]).Late)
	require.False(t, cellOf(t, tb, "raw", p.d[3]).Late)
	require.Contains(t, underCell(t, tb, "raw", p.d[5]), "late")
	// The pipeline draws both jobs, clean with its one live claim.
	// (The live claims are read after the rows in sight are drawn.)
	tb.poll(t, `(document.querySelector('g.job[data-job="clean"] .badge') || {dataset: {}}).dataset.live === '1'`)
	require.Equal(t, "0", eval[string](t, tb, `document.querySelector('g.job[data-job="report"] .badge').dataset.live`))
	require.Contains(t, eval[string](t, tb, `document.querySelector('#claims').innerText`), "test-runner-1")
	// Each dataset's node counts over the grid's columns: raw 4 READY, 2 missing (both late).
	bars := `Array.from(document.querySelectorAll('g.dataset[data-dataset="raw"] rect[class^="s-"]')).map(r => r.getAttribute('class') + ':' + r.querySelector('title').textContent.split(': ')[1]).join(' ')`
	require.Equal(t, "s-READY:4 s-NONE:2", tb.poll(t, bars))
	require.Contains(t, eval[string](t, tb, `document.querySelector('g.dataset[data-dataset="raw"] .sub').textContent`), "2 late")
	tb.screenshot(t, "grid")

	// The dataset's page counts missing and late over its whole history.
	tb.do(t, chromedp.Navigate(s.url+"/ui#/dataset/raw"))
	require.Equal(t, "6 dataids in 2 runs: 4 READY, 2 missing; 2 late", tb.poll(t, `(document.getElementById('strip-note') || {}).textContent`))
	require.Equal(t, p.d[4]+" … "+p.d[5]+" (2)", eval[string](t, tb, `document.querySelector('#late a.id').textContent`))

	// A range before the pipeline's first day: no chunk is drawn or counted.
	tb.do(t, chromedp.Navigate(s.url+"/ui#/?zoom=DAILY&from="+p.day(-60)+"&to="+p.day(-31)))
	tb.poll(t, fmt.Sprintf(`(document.querySelector('#range input[name=from]') || {}).value === %q`, p.day(-60)))
	tb.poll(t, `document.querySelectorAll('.grow[data-ds="raw"] .seg').length === 0 && document.querySelectorAll('g.dataset[data-dataset="raw"] rect[class^="s-"]').length === 0`)
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

	clickCell(t, tb, "cleaned", p.d[0])
	tb.poll(t, `document.querySelector('section.chunk') && document.querySelector('#events') && true`)
	page := eval[string](t, tb, `document.querySelector('section.chunk').innerText`)
	require.Contains(t, page, "Status rows")
	require.Contains(t, page, "GLOBAL_WRITE") // READY: producers may not write it
	require.Contains(t, page, "RUNNING → READY")
	// The page is drawn before its lock graph is laid out, then the graph.
	tb.poll(t, `document.querySelectorAll('#lockgraph').length === 1`)
	require.Equal(t, 0, eval[int](t, tb, `document.querySelectorAll('#lockgraph-pending').length`))
	require.Equal(t, 1, eval[int](t, tb, `document.querySelectorAll('#actions button[data-action="hold"]').length`))
	tb.screenshot(t, "chunk")

	// A chunk on HOLD is offered Resubmit, not Hold again.
	_, err := s.store.Hold(t.Context(), "raw", p.d[1], "checking")
	require.NoError(t, err)
	tb.do(t, chromedp.Navigate(s.url+"/ui#/chunk/raw/"+p.d[1]))
	tb.poll(t, `document.getElementById('chunk-status') && document.getElementById('chunk-status').textContent === 'HOLD'`)
	require.Equal(t, 0, eval[int](t, tb, `document.querySelectorAll('#actions button[data-action="hold"]').length`))
	require.Equal(t, 1, eval[int](t, tb, `document.querySelectorAll('#actions button[data-action="resubmit"]').length`))
	tb.do(t, chromedp.Navigate(s.url+"/ui#/chunk/cleaned/"+p.d[0]))
	tb.poll(t, `document.querySelector('#lockgraph') && document.getElementById('chunk-status').textContent === 'READY' && true`)

	tb.do(t,
		chromedp.Click(chromedp.CSS(`#actions button[data-action="resubmit-cascade"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-ok`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
	)
	tb.poll(t, `document.getElementById('chunk-status') && document.getElementById('chunk-status').textContent === 'RESUBMIT'`)
	tb.do(t, chromedp.Click(chromedp.CSS(`.crumbs a[href="#/"]`)))
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

	// Without a token, the dashboard asks for one and says how one is made.
	tb := newTab(t)
	tb.do(t, chromedp.Navigate(s.url+"/ui"), chromedp.WaitVisible(chromedp.CSS(`#token-input`)))
	require.Contains(t, eval[string](t, tb, `document.getElementById('token-form').innerText`), "chunklock token new --name NAME --role reader >> tokens.yaml")
	tb.screenshot(t, "sign-in")
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

// TestJobPageListsResubmitted: a chunk resubmitted while its input is on
// HOLD waits: the job's page lists it, with what holds it up, though it is
// neither FAILED nor HOLD itself.
func TestJobPageListsResubmitted(t *testing.T) {
	s := newStack(t, false, "report")
	p := seedPipeline(t, s, "admin")
	s.must(t, "admin", `mutation($d: String!) { hold(dataset: "raw", dataid: $d, reason: "checking") { status } }`, map[string]any{"d": p.d[1]})
	s.must(t, "admin", `mutation($d: String!) { resubmit(dataset: "cleaned", dataid: $d) { status } }`, map[string]any{"d": p.d[1]})
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["reader"])
	tb.do(t, chromedp.Navigate(s.url+"/ui#/job/clean"))
	tb.poll(t, `document.querySelector('#resubmitted') && true`)
	row := eval[string](t, tb, `document.querySelectorAll('#resubmitted tr')[1].innerText.replace(/\s+/g, ' ')`)
	require.Contains(t, row, p.d[1])
	require.Contains(t, row, "INPUT_NOT_READY raw "+p.d[1]+" HOLD")
	tb.screenshot(t, "job-resubmitted")
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
		c := cellOf(t, tb, ds, id)
		eval[bool](t, tb, fmt.Sprintf(`document.elementFromPoint(%f, %f).dispatchEvent(new MouseEvent('click', {bubbles: true, shiftKey: true, clientX: %f, clientY: %f}))`, c.X, c.Y, c.X, c.Y))
	}
	tb.poll(t, `document.querySelector('#range-op [name="dataset"]') && true`)
	form := func(name string) string {
		return eval[string](t, tb, fmt.Sprintf(`document.querySelector('#range-op [name=%q]').value`, name))
	}
	ops := func() string {
		return eval[string](t, tb, `Array.from(document.querySelectorAll('#range-op [name="op"] option')).map(o => o.value).join(' ')`)
	}
	// No dataset is chosen until one is picked; a produced dataset is
	// offered resubmit (with its cascade) and hold, not publish.
	require.Equal(t, "", form("dataset"))
	require.True(t, eval[bool](t, tb, `document.querySelector('#range-op [name="op"]').disabled && document.querySelector('#range-op button[data-action="range"]').disabled`))
	pick := func(ds string) {
		eval[bool](t, tb, fmt.Sprintf(`(() => { const s = document.querySelector('#range-op [name="dataset"]'); s.value = %q; s.dispatchEvent(new Event('change')); return true; })()`, ds))
	}
	pick("cleaned")
	require.Equal(t, "resubmitRange holdRange", ops())
	require.Equal(t, "resubmitRange", form("op"))
	require.Equal(t, 1, eval[int](t, tb, `document.querySelectorAll('#range-op [name="cascade"]').length`))
	eval[bool](t, tb, `(() => { const s = document.querySelector('#range-op [name="op"]'); s.value = 'holdRange'; s.dispatchEvent(new Event('change')); return true; })()`)
	require.Equal(t, 0, eval[int](t, tb, `document.querySelectorAll('#range-op [name="cascade"]').length`))
	require.Equal(t, 1, eval[int](t, tb, `document.querySelectorAll('#range-op [name="reason"]').length`))
	require.Equal(t, "cleaned", form("dataset"))
	tb.screenshot(t, "range-form")

	// A shift-clicked range of a source fills the form, offers publish
	// too, and keeps the operation chosen.
	shiftClick("raw", p.d[5])
	shiftClick("raw", p.d[4])
	require.Equal(t, "publishRange resubmitRange holdRange", ops())
	require.Equal(t, "holdRange", form("op"))
	eval[bool](t, tb, `(() => { const s = document.querySelector('#range-op [name="op"]'); s.value = 'publishRange'; s.dispatchEvent(new Event('change')); return true; })()`)
	require.Equal(t, "raw", form("dataset"))
	require.Equal(t, p.d[4], form("from"))
	require.Equal(t, p.d[5], form("to"))
	require.Equal(t, p.d[4]+" "+p.d[5], eval[string](t, tb, `(() => { const b = document.querySelector('.grow[data-ds="raw"] .selbox'); return b.dataset.from + ' ' + b.dataset.to; })()`))
	require.Equal(t, "#/", eval[string](t, tb, `location.hash || '#/'`), "a shift-click does not open the chunk")

	tb.do(t,
		chromedp.Click(chromedp.CSS(`#range-op button[data-action="range"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-ok`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
	)
	for _, d := range p.d[4:6] {
		waitCell(t, tb, "raw", d, "READY")
	}
	require.Contains(t, tb.poll(t, `document.getElementById('range-result').textContent`), "2 changed")
	require.Equal(t, "READY", cellStatus(t, tb, "raw", p.d[3]))
}

// TestLateMarkedLive: lateness comes with the clock, not with an event. The
// grid reads its rows again when the server says the clock changes them
// (changesAt: here when today becomes due), and a chunk held past its
// deadline shows late without a reload.
func TestLateMarkedLive(t *testing.T) {
	s := newStack(t, false, "report")
	p := seedPipeline(t, s, "admin")
	tb := newTab(t)
	signIn(t, tb, s, s.tokens["reader"])
	tb.poll(t, `document.getElementById('live').textContent === 'live'`)
	eval[bool](t, tb, `window.__sameLoad = true`)
	// Nothing turns late by the clock in sight before today becomes due,
	// at midnight: then the page reads the rows again.
	today, err := time.Parse("2006-01-02", p.d[6])
	require.NoError(t, err)
	want := today.AddDate(0, 0, 1).UTC().Format("2006-01-02T15:04:05.000Z")
	require.Equal(t, want, tb.poll(t, `document.getElementById('grid').dataset.changesAt`))

	lateCell := fmt.Sprintf(`window.chunklock.cell("raw", %q).late`, p.d[1])
	require.False(t, eval[bool](t, tb, lateCell))
	s.must(t, "admin", `mutation($d: String!) { hold(dataset: "raw", dataid: $d, reason: "checksum mismatch") { status } }`, map[string]any{"d": p.d[1]})
	waitCell(t, tb, "raw", p.d[1], "HOLD")
	tb.poll(t, lateCell)
	require.Contains(t, underCell(t, tb, "raw", p.d[1]), "late")
	require.True(t, eval[bool](t, tb, `window.__sameLoad === true`), "the page was reloaded")
}
