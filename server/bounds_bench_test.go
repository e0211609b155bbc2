package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/introspection"

	"github.com/chunklock/chunklock/server"
)

// BenchmarkHostileQueries reports the server CPU (user and system time of
// the whole process, over b.N requests, cpu-ms/req) of requests sent to
// the handler in-process as an admin: the reported costly queries and
// their 1 MiB variants, which the early bounds refuse; the costliest
// shapes the default bounds let through (each at a bound); and ordinary
// queries. Then, on etcd and PostgreSQL, the costly partition, summary and
// range requests (benchCosts).
//
//	go test ./server/ -run '^$' -bench BenchmarkHostileQueries -benchtime 20x
func BenchmarkHostileQueries(b *testing.B) {
	d := server.DefaultConfig()
	var distinct strings.Builder
	distinct.WriteString("{")
	for i := range d.MaxSelections / 2 {
		fmt.Fprintf(&distinct, " ...F%d", i)
	}
	distinct.WriteString(" }")
	for i := range d.MaxSelections / 2 {
		fmt.Fprintf(&distinct, " fragment F%d on Query { __typename }", i)
	}
	cases := []struct {
		name, query string
		// refusedBy is the setting named by the refusal; "" for a query
		// the bounds let through.
		refusedBy string
	}{}
	for _, q := range hostileQueries() {
		cases = append(cases, struct{ name, query, refusedBy string }{q.name, q.query, q.setting})
	}
	cases = append(cases, []struct{ name, query, refusedBy string }{
		{"10000 __typename", repeatedSelection("__typename", 10000), "--max-tokens"},
		{"24 levels of nested fragments", nestedFragments(24, 0), "--max-selections"},
		{"admitted: __typename x500", repeatedSelection("__typename", d.MaxSelections), ""},
		{"admitted: jobs { id } x250", repeatedSelection("jobs { id }", d.MaxSelections/2), ""},
		{"admitted: 250 fragments spread side by side", distinct.String(), ""},
		{"admitted: 6 levels of nested fragments", nestedFragments(6, 0), ""},
		{"admitted: 5000 tokens of directives", "{ __typename" + strings.Repeat(" @skip(if: false)", (d.MaxTokens-3)/7) + " }", ""},
		{"ordinary: schema introspection", introspection.Query, ""},
		{"ordinary: jobs with every field", `{ jobs { id description inputs output env { name value } maxAttempts leaseSeconds paused credentials { dataset } } }`, ""},
	}...)

	h, token := adminHandler(b)
	for _, c := range cases {
		// Each request differs in its trailing blanks, as a sender would
		// vary it, so that gqlgen's query cache does not answer it.
		sent := 0
		serve := func() *httptest.ResponseRecorder {
			sent++
			body, err := json.Marshal(map[string]string{"query": c.query + blanks(sent)})
			if err != nil {
				b.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		b.Run(c.name, func(b *testing.B) {
			rec := serve()
			refused := rec.Code == http.StatusUnprocessableEntity && strings.Contains(rec.Body.String(), c.refusedBy)
			if c.refusedBy == "" {
				refused = rec.Code == http.StatusUnprocessableEntity && strings.Contains(rec.Body.String(), "--max-")
			}
			if refused != (c.refusedBy != "") {
				b.Fatalf("status %d: %.300s", rec.Code, rec.Body)
			}
			start := processCPU(b)
			for b.Loop() {
				serve()
			}
			b.ReportMetric(float64(processCPU(b)-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/req")
			b.ReportMetric(float64(len(c.query)), "query-bytes")
		})
	}
	for _, k := range storeKinds[1:] {
		b.Run("costs/"+k.Name, func(b *testing.B) { benchCosts(b, k) })
	}
}

// blanks spells n in binary with spaces and tabs, which GraphQL ignores.
func blanks(n int) string {
	return strings.NewReplacer("0", " ", "1", "\t").Replace(strconv.FormatInt(int64(n), 2))
}

// processCPU is the user and system time the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
