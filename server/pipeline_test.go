package server_test

import (
	"github.com/stretchr/testify/require"
)

// The pipeline most tests use: source dataset a, job ja (a -> b), job jb
// (b -> c).
const (
	upsertDatasetQ = `mutation($in: DatasetInput!) { upsertDataset(input: $in) { id location } }`
	upsertJobQ     = `mutation($in: JobInput!) { upsertJob(input: $in) { job { id inputs output key { kind public } } jobKey } }`
	publishQ       = `mutation($d: String!, $id: String!) { publish(dataset: $d, dataid: $id) { dataset dataid job status } }`
	findNextQ      = `mutation($job: String!, $ex: String!) { findNext(job: $job, executor: $ex) { token job dataid attempt executor fence leaseExpiresAt
		output { dataset dataid url connection location secret }
		inputs { dataset dataid url connection location secret }
		env { name value } } }`
	claimQ     = `mutation($job: String!, $id: String!, $ex: String!) { claim(job: $job, dataid: $id, executor: $ex) { token job dataid attempt } }`
	forceQ     = `mutation($job: String!, $id: String!, $ex: String!) { force(job: $job, dataid: $id, executor: $ex) { token job dataid attempt } }`
	heartbeatQ = `mutation($t: String!) { heartbeat(token: $t) { token leaseExpiresAt } }`
	completeQ  = `mutation($t: String!) { complete(token: $t) }`
	failQ      = `mutation($t: String!, $r: String) { fail(token: $t, reason: $r) }`
	releaseQ   = `mutation($t: String!) { release(token: $t) }`
	chunkQ     = `query($d: String!, $id: String!) { chunk(dataset: $d, dataid: $id) { dataset dataid location status
		output { job status attempt reason }
		rows { dataset dataid job role status attempt executor fence token reason locks location }
		locks { dataset dataid kind job status } } }`
	blockersQ = `query($job: String!, $id: String!) { blockers(job: $job, dataid: $id) { dataset dataid job kind status } }`
)

// claimDoc is the claim payload the tests read.
type claimDoc struct {
	Token          *string `json:"token"`
	Job            string  `json:"job"`
	DataID         string  `json:"dataid"`
	Attempt        int     `json:"attempt"`
	Executor       string  `json:"executor"`
	Fence          int     `json:"fence"`
	LeaseExpiresAt string  `json:"leaseExpiresAt"`
	Output         access  `json:"output"`
	Inputs         []access
	Env            []struct{ Name, Value string }
}

type access struct {
	Dataset, DataID, URL, Connection, Location string
	Secret                                     *string
}

type chunkDoc struct {
	Dataset, DataID, Location, Status string
	Output                            *struct {
		Job     *string
		Status  string
		Attempt int
		Reason  string
	}
	Rows []struct {
		Dataset, DataID string
		Job             *string
		Role, Status    string
		Attempt         int
		Executor        string
		Fence           int
		Token           *string
		Reason          string
		Locks           []string
		Location        string
	}
	Locks []lockDoc
}

type lockDoc struct {
	Dataset, DataID, Kind string
	Job                   *string
	Status                string
}

// define creates datasets a, b, c and jobs ja (a -> b) and jb (b -> c) as
// admin, and returns the job keys.
func (s *stack) define() (keyA, keyB string) {
	s.t.Helper()
	for _, d := range []map[string]any{
		{"id": "a", "description": "source", "url": "s3://lake", "connection": "region=eu", "location": "s3://lake/a/dt={dataid}/"},
		{"id": "b", "url": "postgres://wh:5432/sales", "connection": "sslmode=require", "location": "load_date = '{dataid}'"},
		{"id": "c", "url": "s3://lake", "location": "s3://lake/c/{dataid}"},
	} {
		s.ok(admin, upsertDatasetQ, vars("in", d))
	}
	keys := make([]string, 2)
	for i, j := range []map[string]any{
		{"id": "ja", "inputs": []string{"a"}, "output": "b", "env": []map[string]string{{"name": "MODE", "value": "full"}}, "leaseSeconds": 30},
		{"id": "jb", "inputs": []string{"b"}, "output": "c", "maxAttempts": 2},
	} {
		var p struct {
			Job    struct{ ID string }
			JobKey *string
		}
		s.ok(admin, upsertJobQ, vars("in", j)).field(s.t, "upsertJob", &p)
		require.NotNil(s.t, p.JobKey, "the first upsert returns the job key")
		keys[i] = *p.JobKey
	}
	return keys[0], keys[1]
}

func (s *stack) findNext(who, job, executor, jobKey string) *claimDoc {
	s.t.Helper()
	r := s.send(request{who: who, query: findNextQ, vars: vars("job", job, "ex", executor), jobKey: jobKey})
	require.Empty(s.t, r.Errors, "findNext: %s", r.Body)
	var c *claimDoc
	r.field(s.t, "findNext", &c)
	return c
}

func (s *stack) chunk(dataset, dataid string) chunkDoc {
	s.t.Helper()
	var c chunkDoc
	s.ok(reader, chunkQ, vars("d", dataset, "id", dataid)).field(s.t, "chunk", &c)
	return c
}

func (s *stack) publish(dataset, dataid string) {
	s.t.Helper()
	s.ok(admin, publishQ, vars("d", dataset, "id", dataid))
}
