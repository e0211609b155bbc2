package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chunklock/chunklock/auth"
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

// The costly requests of the partition and range fields, on a store seeded
// at the sizes users have: "ny", ten years of New York hours (2016-2025,
// 87,672 due dataids, every one READY, so a filter on missing ones finds
// none); "nyrecent" and "nymiddle", the same hours missing the last three
// and also one in the middle; "static", a STATIC set of 10,000 values, the first 5,000 READY;
// for ranges, fresh DAILY datasets of 10,000 expected days; for publishes
// under a lookback, an hourly source read by a job through a TIME_WINDOW
// mapping of startOffset -999 or -8759 (1,000 or 8,760 input hours a
// claim).

// costClock is where the cost benchmarks' clock stands.
var costClock = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// costStack is a server over one store seeded for the cost cases, called
// in-process.
type costStack struct {
	store  backends.Store
	cfg    server.Config
	h      http.Handler
	tokens map[string]string
	// lookbacks counts the hours published so far per source.
	lookbacks map[string]int
}

func newCostStack(b *testing.B, kind storeKind) *costStack {
	store := kind.Open(b, backends.NewFakeClock(costClock), 1)[0]
	tokens := map[string]string{}
	var file strings.Builder
	for name, role := range map[string]auth.Role{admin: auth.RoleAdmin, reader: auth.RoleReader} {
		tok, entry, err := auth.NewToken(name, role, nil)
		if err != nil {
			b.Fatal(err)
		}
		tokens[name] = tok
		fmt.Fprintf(&file, "- name: %s\n  sha256: %s\n  role: %s\n", entry.Name, entry.SHA256, entry.Role)
	}
	parsed, err := auth.ParseTokens([]byte(file.String()))
	if err != nil {
		b.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring, cfg.Tokens = store, age.New(), parsed
	s := &costStack{store: store, cfg: cfg, tokens: tokens, lookbacks: map[string]int{}}
	s.renew(b)
	s.seed(b)
	return s
}

// renew serves the store with a new server.
func (s *costStack) renew(b *testing.B) {
	srv, err := server.New(s.cfg)
	if err != nil {
		b.Fatal(err)
	}
	s.h = srv.Handler()
}

// seed defines "ny", "nyrecent", "nymiddle", "static" and "seq" and publishes
// their chunks.
func (s *costStack) seed(b *testing.B) {
	ctx := context.Background()
	deadline := time.Hour
	ny := partition.Def{Kind: partition.Hourly, Start: "2016-01-01T00", Timezone: "America/New_York", Deadline: &deadline}
	values := make([]string, partition.MaxStaticValues)
	for i := range values {
		values[i] = fmt.Sprintf("v%05d", i)
	}
	for _, d := range []backends.Dataset{
		{ID: "ny", Location: "/ny/{dataid}", Partitions: &ny},
		{ID: "static", Location: "/static/{dataid}", Partitions: &partition.Def{Kind: partition.Static, Values: values}},
	} {
		if _, err := s.store.UpsertDataset(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	last, _ := ny.DueBefore(costClock)
	seq, err := ny.Range("", last)
	if err != nil {
		b.Fatal(err)
	}
	var ids []string
	for id := range seq {
		ids = append(ids, id)
	}
	for i := 0; i < len(ids); i += backends.MaxRangeDataIDs {
		j := min(i+backends.MaxRangeDataIDs, len(ids)) - 1
		if _, err := s.store.PublishRange(ctx, "ny", ids[i], ids[j]); err != nil {
			b.Fatal(err)
		}
	}
	// The same hours with some missing: "nyrecent" the last three (a live
	// feed running late), "nymiddle" also one in the middle of the ten
	// years (the oldest missing one, the farthest from either end).
	for ds, gaps := range map[string][]int{"nyrecent": {len(ids) - 3}, "nymiddle": {len(ids) / 2, len(ids) - 3}} {
		if _, err := s.store.UpsertDataset(ctx, backends.Dataset{ID: ds, Location: "/" + ds + "/{dataid}", Partitions: &ny}); err != nil {
			b.Fatal(err)
		}
		from := 0
		for _, gap := range append(gaps, len(ids)) {
			for i := from; i < gap; i += backends.MaxRangeDataIDs {
				j := min(i+backends.MaxRangeDataIDs, gap) - 1
				if _, err := s.store.PublishRange(ctx, ds, ids[i], ids[j]); err != nil {
					b.Fatal(err)
				}
			}
			from = gap + 1
		}
	}
	if _, err := s.store.PublishRange(ctx, "static", values[0], values[len(values)/2-1]); err != nil {
		b.Fatal(err)
	}
	// "seq": 200,000 sequence numbers (INTEGER without end), one missing
	// in the middle: twice the rows a count that reads them looks at.
	if _, err := s.store.UpsertDataset(ctx, backends.Dataset{ID: "seq", Location: "/seq/{dataid}", Partitions: &partition.Def{Kind: partition.Integer}}); err != nil {
		b.Fatal(err)
	}
	const seqRows, seqGap = 200000, 100000
	for i := 0; i < seqRows; i += backends.MaxRangeDataIDs {
		from, to := i, min(i+backends.MaxRangeDataIDs, seqRows)-1
		for _, r := range [][2]int{{from, min(to, seqGap-1)}, {max(from, seqGap+1), to}} {
			if r[0] > r[1] {
				continue
			}
			if _, err := s.store.PublishRange(ctx, "seq", strconv.Itoa(r[0]), strconv.Itoa(r[1])); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// freshRanges defines n DAILY datasets of 10,000 expected days that no
// request touched yet, and returns their ids.
func (s *costStack) freshRanges(b *testing.B, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("ranged-%d", s.lookbacks["ranged"])
		s.lookbacks["ranged"]++
		d := backends.Dataset{ID: ids[i], Location: "/r/{dataid}", Partitions: &partition.Def{Kind: partition.Daily, Start: rangeFrom}}
		if _, err := s.store.UpsertDataset(context.Background(), d); err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

// 2000-01-01 to 2027-05-18: 10,000 days.
const rangeFrom, rangeTo = "2000-01-01", "2027-05-18"

// defineLookback defines an hourly source and output from 2025-01-01 and
// a job reading the source's last k hours for each output hour.
func (s *costStack) defineLookback(b *testing.B, k int) string {
	ctx := context.Background()
	src, out := fmt.Sprintf("lb%d-src", k), fmt.Sprintf("lb%d-out", k)
	def := partition.Def{Kind: partition.Hourly, Start: "2025-01-01T00"}
	for _, id := range []string{src, out} {
		if _, err := s.store.UpsertDataset(ctx, backends.Dataset{ID: id, Location: "/" + id + "/{dataid}", Partitions: &def}); err != nil {
			b.Fatal(err)
		}
	}
	j := backends.Job{ID: fmt.Sprintf("lb%d", k), Inputs: []string{src}, Output: out,
		InputMappings: []backends.InputMapping{{Dataset: src, Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: 1 - k}}}}
	if _, err := s.store.UpsertJob(ctx, j); err != nil {
		b.Fatal(err)
	}
	return src
}

// nextHour is the next hour of src to publish.
func (s *costStack) nextHour(src string) string {
	n := s.lookbacks[src]
	s.lookbacks[src]++
	return time.Date(2025, 1, 1, n, 0, 0, 0, time.UTC).Format("2006-01-02T15")
}

// serve sends query as who and returns the answer, the server CPU and the
// wall time it took.
func (s *costStack) serve(b *testing.B, who, query string, vars map[string]any) (*httptest.ResponseRecorder, time.Duration, time.Duration) {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.tokens[who])
	rec := httptest.NewRecorder()
	cpu, start := processCPU(b), time.Now()
	s.h.ServeHTTP(rec, req)
	return rec, processCPU(b) - cpu, time.Since(start)
}

// costCase is one request shape of the cost benchmarks: query builds the
// i-th request (each differs, so that no cache of a previous one answers).
type costCase struct {
	name string
	who  string
	// fresh: each request goes to a server of its own (over the same
	// store), which has counted no summary yet.
	fresh bool
	query func(b *testing.B, s *costStack, i int) (string, map[string]any)
}

// aliases is an operation (op: "query", "mutation" or "") of n fields
// under aliases a0, a1, ...: field(i) is the i-th.
func aliases(op string, n int, field func(i int) string) string {
	var b strings.Builder
	b.WriteString(op + " {")
	for i := range n {
		fmt.Fprintf(&b, " a%d: %s", i, field(i))
	}
	b.WriteString(" }")
	return b.String()
}

// same is a field for aliases that is the same under every alias.
func same(field string) func(int) string { return func(int) string { return field } }

func fixed(query string) func(*testing.B, *costStack, int) (string, map[string]any) {
	return func(_ *testing.B, _ *costStack, i int) (string, map[string]any) { return query + blanks(i+1), nil }
}

func costCases() []costCase {
	// The hostile shapes select little, so that 100 aliases stay within
	// --max-selections (500).
	summary := func(ds string) func(int) string {
		return same(`dataset(id: "` + ds + `") { partitionSummary { missing } }`)
	}
	partitions := func(ds, args, sel string) func(int) string {
		return same(`partitions(dataset: "` + ds + `"` + args + `) { ` + sel + ` }`)
	}
	rows, end := `edges { cursor }`, `pageInfo { endCursor }`
	grid := `edges { node { dataid status late } } pageInfo { hasNextPage endCursor }`
	status := `{ datasets { id partitionSummary { at missing late oldestMissing oldestLate truncated } } }`
	holdRanges := func(n int) func(*testing.B, *costStack, int) (string, map[string]any) {
		return func(b *testing.B, s *costStack, _ int) (string, map[string]any) {
			ids := s.freshRanges(b, n)
			return aliases("mutation", n, func(i int) string {
				return `holdRange(dataset: "` + ids[i] + `", from: "` + rangeFrom + `", to: "` + rangeTo + `", reason: "bench") { changed unchanged }`
			}), nil
		}
	}
	publish := func(k int) func(*testing.B, *costStack, int) (string, map[string]any) {
		return func(b *testing.B, s *costStack, _ int) (string, map[string]any) {
			src := fmt.Sprintf("lb%d-src", k)
			if _, ok := s.lookbacks[src]; !ok {
				s.defineLookback(b, k)
			}
			return `mutation($d: String!, $i: String!) { publish(dataset: $d, dataid: $i) { status } }`, map[string]any{"d": src, "i": s.nextHour(src)}
		}
	}
	pages := aliases("query", 10, partitions("ny", `, from: "2025-12-01T00", to: "2025-12-31T23", first: 1000`, grid))
	// What the dashboard's grid asks (ui/web/src/views/rows.ts): runs of
	// one status over a part of the time axis, ten datasets a request.
	dashboard := aliases("query", 10, same(`partitionRuns(dataset: "ny", from: "2025-12-01T00", to: "2025-12-31T23", limit: 745) { count next changesAt runs { from to count status late } }`))
	return []costCase{
		{"100 aliased summaries of ten years of NY hours, first count", reader, true, fixed(aliases("query", 100, summary("ny")))},
		{"admitted: 10 aliased summaries of ten years of NY hours, first count", reader, true, fixed(aliases("query", 10, summary("ny")))},
		{"admitted: 10 aliased summaries of ten years of NY hours, counted already", reader, false, fixed(aliases("query", 10, summary("ny")))},
		{"admitted: 10 aliased summaries of ten years of NY hours missing the last 3, first count", reader, true, fixed(aliases("query", 10, summary("nyrecent")))},
		{"admitted: 10 aliased summaries of ten years of NY hours missing one in the middle, first count", reader, true, fixed(aliases("query", 10, summary("nymiddle")))},
		{"admitted: 10 aliased summaries of ten years of NY hours missing one in the middle, counted again after a hold elsewhere", reader, false, func(b *testing.B, s *costStack, i int) (string, map[string]any) {
			// A mutation through the server: every summary is counted again.
			rec, _, _ := s.serve(b, admin, `mutation { hold(dataset: "static", dataid: "v09999", reason: "again") { status } }`, nil)
			if strings.Contains(rec.Body.String(), `"errors"`) {
				b.Fatalf("hold: %s", rec.Body.String())
			}
			return fixed(aliases("query", 10, summary("nymiddle")))(b, s, i)
		}},
		{"admitted: 10 aliased summaries of 200,000 sequence numbers missing one in the middle, first count", reader, true, fixed(aliases("query", 10, summary("seq")))},
		{"100 aliased summaries of a 10,000-value STATIC set, first count", reader, true, fixed(aliases("query", 100, summary("static")))},
		{"admitted: 10 aliased summaries of a 10,000-value STATIC set, first count", reader, true, fixed(aliases("query", 10, summary("static")))},
		{"100 aliased partitions(first: 1000) of ten years of NY hours", reader, false, fixed(aliases("query", 100, partitions("ny", ", first: 1000", rows)))},
		{"100 aliased partitions(status: NONE) of ten years of NY hours", reader, false, fixed(aliases("query", 100, partitions("ny", ", status: NONE, first: 1000", end)))},
		{"100 aliased partitions(status: NONE) of a 10,000-value STATIC set", reader, false, fixed(aliases("query", 100, partitions("static", ", status: NONE, first: 1000", end)))},
		{"10 aliased holdRange of 10,000 days", admin, false, holdRanges(10)},
		{"admitted: one holdRange of 10,000 days", admin, false, holdRanges(1)},
		{"admitted: one partitions(status: NONE) of ten years of NY hours", reader, false, fixed(`{ ` + partitions("ny", ", status: NONE, first: 1000", grid)(0) + ` }`)},
		{"ordinary: chunklock status (every dataset's summary), first count", reader, true, fixed(status)},
		{"ordinary: chunklock status (every dataset's summary), counted already", reader, false, fixed(status)},
		{"10 aliased partitions pages of a month of hours (the dashboard's grid before partitionRuns)", reader, false, fixed(pages)},
		{"ordinary: the dashboard's grid, 10 datasets of a month of hours", reader, false, fixed(dashboard)},
		{"publish under a TIME_WINDOW lookback of 1,000 hours", admin, false, publish(1000)},
		{"publish under a TIME_WINDOW lookback of 8,760 hours", admin, false, publish(8760)},
	}
}

// benchCosts runs the cost cases on one store kind, reporting the server
// CPU (cpu-ms/req: the whole process, an embedded etcd member included)
// and wall time of each request, and whether the server refused it by a
// limit (refused) or answered errors (errors).
func benchCosts(b *testing.B, kind storeKind) {
	s := newCostStack(b, kind)
	for _, c := range costCases() {
		b.Run(c.name, func(b *testing.B) {
			if strings.Contains(c.name, "8,760") && os.Getenv("CHUNKLOCK_BENCH_LOOKBACK_8760") == "" {
				b.Skip("set CHUNKLOCK_BENCH_LOOKBACK_8760=1 to run it: before mapped windows are intervals, a publish under it needs tens of GB")
			}
			if strings.Contains(c.name, "lookback") && kind.Name != "postgres" {
				b.Skip("PostgreSQL only")
			}
			var cpu, wall time.Duration
			refused, failed, i := 0, 0, 0
			for b.Loop() {
				q, v := c.query(b, s, i)
				i++
				if c.fresh {
					s.renew(b)
				}
				rec, dc, dw := s.serve(b, c.who, q, v)
				cpu, wall = cpu+dc, wall+dw
				body := rec.Body.String()
				if rec.Code == http.StatusUnprocessableEntity && strings.Contains(body, "complexity") {
					refused++
				} else if strings.Contains(body, `"errors"`) {
					failed++
					if failed == 1 {
						b.Logf("errors: %.400s", body)
					}
				}
			}
			b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(i), "cpu-ms/req")
			b.ReportMetric(float64(wall)/float64(time.Millisecond)/float64(i), "wall-ms/req")
			b.ReportMetric(float64(refused)/float64(i), "refused")
			b.ReportMetric(float64(failed)/float64(i), "errors")
		})
	}
}
