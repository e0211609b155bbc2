package client

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// Dataset is a dataset as the server describes it.
type Dataset struct {
	ID          string      `json:"id"`
	Description string      `json:"description"`
	URL         string      `json:"url"`
	Connection  string      `json:"connection"`
	Location    string      `json:"location"`
	Partitions  *Partitions `json:"partitions"`
	// Pipeline names the pipeline whose apply created the dataset; nil
	// when it was created otherwise.
	Pipeline *string `json:"pipeline"`
	// Retention is the dataset's own retention of events; nil when the
	// server's --retain-events applies.
	Retention *Retention `json:"retention"`
}

// Retention is a dataset's own retention (Retention, RetentionInput).
type Retention struct {
	// EventsSeconds is how long the dataset's events are kept; 0: for ever.
	EventsSeconds int `json:"eventsSeconds"`
}

// Backend converts d to the core type. The values of a DYNAMIC dimension
// become its members (partition.Def.ValuesAsMembers), which UpsertDataset
// never sends: the server keeps a dimension's values, added at run time.
func (d Dataset) Backend() backends.Dataset {
	out := backends.Dataset{ID: d.ID, Description: d.Description, URL: d.URL, Connection: d.Connection, Location: d.Location,
		Partitions: d.Partitions.Def(), Pipeline: deref(d.Pipeline)}
	if out.Partitions != nil {
		def := out.Partitions.ValuesAsMembers()
		out.Partitions = &def
	}
	if d.Retention != nil {
		out.Retention = &backends.Retention{EventsSeconds: d.Retention.EventsSeconds}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Partitions is a dataset's partition definition as the API carries it
// (PartitionDefinition, PartitionDefinitionInput).
type Partitions = partition.Spec

// Job is a job as the server describes it.
type Job struct {
	ID           string   `json:"id"`
	Description  string   `json:"description"`
	Inputs       []string `json:"inputs"`
	Output       string   `json:"output"`
	Env          []EnvVar `json:"env"`
	MaxAttempts  int      `json:"maxAttempts"`
	LeaseSeconds int      `json:"leaseSeconds"`
	Paused       bool     `json:"paused"`

	RetryDelaySeconds    int     `json:"retryDelaySeconds"`
	RetryMaxDelaySeconds int     `json:"retryMaxDelaySeconds"`
	MaxConcurrent        *int    `json:"maxConcurrent"`
	Pool                 *string `json:"pool"`
	// InputMappings are the job's mappings of inputs read other than one
	// to one (SPEC §9), in input order.
	InputMappings []InputMapping `json:"inputMappings"`
	// Pipeline names the pipeline whose apply created the job; nil when
	// it was created otherwise.
	Pipeline *string `json:"pipeline"`

	Credentials []struct {
		Dataset string `json:"dataset"`
	} `json:"credentials"`
}

// InputMapping is the mapping of one input of a job, as the API carries it
// (InputMapping, InputMappingInput).
type InputMapping = backends.InputMapping

// EnvVar is one entry of a job's environment.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Backend converts j to the core type.
func (j Job) Backend() backends.Job {
	env := make([]backends.EnvVar, len(j.Env))
	for i, e := range j.Env {
		env[i] = backends.EnvVar{Name: e.Name, Value: e.Value}
	}
	bj := backends.Job{ID: j.ID, Description: j.Description, Inputs: j.Inputs, Output: j.Output, Env: env,
		MaxAttempts: j.MaxAttempts, LeaseSeconds: j.LeaseSeconds, Paused: j.Paused,
		RetryDelaySeconds: j.RetryDelaySeconds, RetryMaxDelaySeconds: j.RetryMaxDelaySeconds}
	if len(j.InputMappings) > 0 {
		bj.InputMappings = append([]backends.InputMapping{}, j.InputMappings...)
	}
	if j.MaxConcurrent != nil {
		bj.MaxConcurrent = *j.MaxConcurrent
	}
	if j.Pool != nil {
		bj.Pool = *j.Pool
	}
	bj.Pipeline = deref(j.Pipeline)
	return bj
}

// HasCredential tells whether the job holds a secret for dataset.
func (j Job) HasCredential(dataset string) bool {
	for _, c := range j.Credentials {
		if c.Dataset == dataset {
			return true
		}
	}
	return false
}

// StatusRow is one row of the status table. Status is spelled as in the
// schema (NONE, RUNNING, READY, ...); Job is "" for a published chunk.
type StatusRow struct {
	Dataset        string     `json:"dataset"`
	DataID         string     `json:"dataid"`
	Job            string     `json:"job"`
	Role           string     `json:"role"`
	Status         string     `json:"status"`
	Attempt        int        `json:"attempt"`
	Executor       string     `json:"executor"`
	Fence          int64      `json:"fence"`
	Token          string     `json:"token"`
	LeaseExpiresAt *time.Time `json:"leaseExpiresAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
	Reason         string     `json:"reason"`
	Location       string     `json:"location"`
	// ReadFor is, on an INPUT row, the output dataid the job read the
	// chunk for (its own dataid unless a mapping reads it for another);
	// nil on OUTPUT rows.
	ReadFor *string `json:"readFor"`
}

// Event is one recorded status transition.
type Event struct {
	Cursor   string    `json:"cursor"`
	Time     time.Time `json:"time"`
	Actor    string    `json:"actor"`
	Job      string    `json:"job"`
	Dataset  string    `json:"dataset"`
	DataID   string    `json:"dataid"`
	Role     string    `json:"role"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	Attempt  int       `json:"attempt"`
	Executor string    `json:"executor"`
	Reason   string    `json:"reason"`
}

// Blocker is one reason a job cannot claim a chunk now.
type Blocker struct {
	Dataset string `json:"dataset"`
	DataID  string `json:"dataid"`
	Job     string `json:"job"`
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	// Until is when the blocker lifts by itself (NOT_DUE, BACKOFF); nil
	// when no time is known.
	Until *time.Time `json:"until"`
	// Pool names the pool without a free slot (CONCURRENCY); nil when the
	// job's own maxConcurrent is reached.
	Pool *string `json:"pool"`
}

// LockGraph is the graph of jobs, datasets and chunks and who reads and
// writes what.
type LockGraph struct {
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
}

// GraphNode is a job, a dataset or a chunk.
type GraphNode struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Job     string `json:"job"`
	Dataset string `json:"dataset"`
	DataID  string `json:"dataid"`
	Status  string `json:"status"`
}

// GraphEdge goes from a job to what it reads or writes.
type GraphEdge struct {
	From   string   `json:"from"`
	To     string   `json:"to"`
	Kind   string   `json:"kind"`
	Locks  []string `json:"locks"`
	Status string   `json:"status"`
	// Mapping is the mapping of a READS edge to a dataset read other than
	// one to one; nil otherwise.
	Mapping *InputMapping `json:"mapping"`
}

// ResourceLock is a named lock on a resource URI.
type ResourceLock struct {
	ID        string    `json:"id"`
	Client    string    `json:"client"`
	Resource  string    `json:"resource"`
	Mode      string    `json:"mode"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

const (
	datasetFields   = `id description url connection location partitions { kind start end timezone values lagSeconds deadlineSeconds dimensions { name kind start end timezone values } }` + pipelineField + retentionFields
	pipelineField   = ` pipeline`
	retentionFields = ` retention { eventsSeconds }`
	jobFields       = `id description inputs output env { name value } maxAttempts leaseSeconds paused retryDelaySeconds retryMaxDelaySeconds maxConcurrent pool inputMappings { dataset kind startOffset endOffset dimension outputDimension } credentials { dataset }` + pipelineField
	accessFields    = `dataset dataid url connection location dimensions { name value } secret`
	// ClaimFields selects every field of a Claim.
	ClaimFields = `token job dataid attempt executor fence leaseExpiresAt
		output { ` + accessFields + ` } inputs { ` + accessFields + ` } env { name value }`
	rowFields = `dataset dataid job role status attempt executor fence token leaseExpiresAt updatedAt reason location readFor`
	// EventFields selects every field of an Event.
	EventFields = `cursor time actor job dataset dataid role from to attempt executor reason`
	lockFields  = `id client resource mode createdAt expiresAt`
)

// Datasets lists every dataset. From a server older than
// Dataset.retention and the pipeline fields, every Retention and Pipeline
// is nil.
func (c *Client) Datasets(ctx context.Context) ([]Dataset, error) {
	var out struct{ Datasets []Dataset }
	err := c.doCompat(ctx, `query { datasets { `+datasetFields+` } }`, nil, &out)
	return out.Datasets, err
}

// doCompat is Do, asked again without the fields a server older than them
// refuses (Dataset.retention; pipeline on datasets, jobs and pools), which
// are then left empty.
func (c *Client) doCompat(ctx context.Context, query string, vars map[string]any, out any) error {
	err := c.Do(ctx, query, vars, out)
	if err != nil && CodeOf(err) == "GRAPHQL_VALIDATION_FAILED" &&
		(strings.Contains(err.Error(), `"retention"`) || strings.Contains(err.Error(), `"pipeline"`)) {
		older := strings.ReplaceAll(strings.ReplaceAll(query, retentionFields, ""), pipelineField, "")
		if older != query {
			err = c.Do(ctx, older, vars, out)
		}
	}
	return err
}

// Jobs lists every job.
func (c *Client) Jobs(ctx context.Context) ([]Job, error) {
	var out struct{ Jobs []Job }
	err := c.doCompat(ctx, `query { jobs { `+jobFields+` } }`, nil, &out)
	return out.Jobs, err
}

// Job returns one job (NOT_FOUND when there is none).
func (c *Client) Job(ctx context.Context, id string) (Job, error) {
	var out struct{ Job *Job }
	if err := c.doCompat(ctx, `query($id: String!) { job(id: $id) { `+jobFields+` } }`, map[string]any{"id": id}, &out); err != nil {
		return Job{}, err
	}
	if out.Job == nil {
		return Job{}, &Error{Code: backends.CodeNotFound, Message: fmt.Sprintf("job %q not found", id)}
	}
	return *out.Job, nil
}

// UpsertDataset creates or replaces a dataset.
func (c *Client) UpsertDataset(ctx context.Context, d backends.Dataset) error {
	in := map[string]any{"id": d.ID, "description": d.Description, "url": d.URL, "connection": d.Connection, "location": d.Location}
	if d.Partitions != nil {
		in["partitions"] = partition.SpecOf(d.Partitions)
	}
	if d.Pipeline != "" {
		in["pipeline"] = d.Pipeline
	}
	if d.Retention != nil {
		in["retention"] = map[string]any{"eventsSeconds": d.Retention.EventsSeconds}
	}
	return c.Do(ctx, `mutation($in: DatasetInput!) { upsertDataset(input: $in) { id } }`, map[string]any{"in": in}, nil)
}

// UpsertJob creates or replaces a job. jobKey is set only by the call that
// created the job's key (its first upsert): it is shown this once.
func (c *Client) UpsertJob(ctx context.Context, j backends.Job) (jobKey string, err error) {
	env := make([]map[string]string, len(j.Env))
	for i, e := range j.Env {
		env[i] = map[string]string{"name": e.Name, "value": e.Value}
	}
	inputs := j.Inputs
	if inputs == nil {
		inputs = []string{}
	}
	in := map[string]any{"id": j.ID, "description": j.Description, "inputs": inputs, "output": j.Output, "env": env, "paused": j.Paused}
	if j.MaxAttempts != 0 {
		in["maxAttempts"] = j.MaxAttempts
	}
	if j.LeaseSeconds != 0 {
		in["leaseSeconds"] = j.LeaseSeconds
	}
	in["retryDelaySeconds"] = j.RetryDelaySeconds
	if j.RetryMaxDelaySeconds != 0 {
		in["retryMaxDelaySeconds"] = j.RetryMaxDelaySeconds
	}
	if j.MaxConcurrent != 0 {
		in["maxConcurrent"] = j.MaxConcurrent
	}
	if j.Pool != "" {
		in["pool"] = j.Pool
	}
	if j.Pipeline != "" {
		in["pipeline"] = j.Pipeline
	}
	if len(j.InputMappings) > 0 { // omitted: none (the schema's default)
		ms := make([]map[string]any, len(j.InputMappings))
		for i, m := range j.InputMappings {
			kind := m.Kind
			if kind == "" {
				kind = partition.Identity
			}
			ms[i] = map[string]any{"dataset": m.Dataset, "kind": kind, "startOffset": m.StartOffset, "endOffset": m.EndOffset}
			// An entry of a mapping by dimension names its dimensions
			// (sent only then: a server older than them takes the rest).
			if m.Dimension != "" {
				ms[i]["dimension"] = m.Dimension
			}
			if m.OutputDimension != "" {
				ms[i]["outputDimension"] = m.OutputDimension
			}
		}
		in["inputMappings"] = ms
	}
	var out struct {
		UpsertJob struct {
			JobKey *string `json:"jobKey"`
		} `json:"upsertJob"`
	}
	if err := c.Do(ctx, `mutation($in: JobInput!) { upsertJob(input: $in) { job { id } jobKey } }`, map[string]any{"in": in}, &out); err != nil {
		return "", err
	}
	if out.UpsertJob.JobKey == nil {
		return "", nil
	}
	return *out.UpsertJob.JobKey, nil
}

// SetCredential stores a dataset secret for a job, encrypted to the job's key.
func (c *Client) SetCredential(ctx context.Context, job, dataset, secret string) error {
	return c.Do(ctx, `mutation($job: String!, $dataset: String!, $secret: String!) { setCredential(job: $job, dataset: $dataset, secret: $secret) { id } }`,
		map[string]any{"job": job, "dataset": dataset, "secret": secret}, nil)
}

// publishBatch is how many publish mutations go in one request.
const publishBatch = 25

// Publish marks chunks of a source dataset READY, several per request.
func (c *Client) Publish(ctx context.Context, dataset string, dataids []string) error {
	for start := 0; start < len(dataids); start += publishBatch {
		batch := dataids[start:min(start+publishBatch, len(dataids))]
		var q strings.Builder
		vars := map[string]any{"ds": dataset}
		q.WriteString("mutation($ds: String!")
		for i := range batch {
			fmt.Fprintf(&q, ", $d%d: String!", i)
		}
		q.WriteString(") {")
		for i, d := range batch {
			fmt.Fprintf(&q, " p%d: publish(dataset: $ds, dataid: $d%d) { status }", i, i)
			vars[fmt.Sprintf("d%d", i)] = d
		}
		q.WriteString(" }")
		if err := c.Do(ctx, q.String(), vars, nil); err != nil {
			return err
		}
	}
	return nil
}

func (c *Client) claimOp(ctx context.Context, op string, vars map[string]any) (*Claim, error) {
	var params, args []string
	for _, k := range []string{"job", "dataid", "executor"} {
		if _, ok := vars[k]; ok {
			params = append(params, "$"+k+": String!")
			args = append(args, k+": $"+k)
		}
	}
	q := fmt.Sprintf("mutation(%s) { claim: %s(%s) { %s } }", strings.Join(params, ", "), op, strings.Join(args, ", "), ClaimFields)
	var out struct{ Claim *Claim }
	err := c.Do(ctx, q, vars, &out)
	if err != nil && out.Claim != nil && out.Claim.Token != "" {
		// The chunk was claimed but part of the claim failed (a job key
		// that is not the job's): give it back rather than leave it to
		// expire.
		if rerr := c.Release(ctx, out.Claim.Token); rerr == nil {
			return nil, fmt.Errorf("%w (the claim on %s %s was released)", err, out.Claim.Job, out.Claim.DataID)
		}
	}
	if err != nil {
		return nil, err
	}
	return out.Claim, nil
}

// FindNext claims the next chunk job may produce; nil when there is none.
func (c *Client) FindNext(ctx context.Context, job, executor string) (*Claim, error) {
	return c.claimOp(ctx, "findNext", map[string]any{"job": job, "executor": executor})
}

// Claim claims one given dataid; LOCKED (with Blockers) when it cannot be
// claimed now.
func (c *Client) Claim(ctx context.Context, job, dataid, executor string) (*Claim, error) {
	return c.claimOp(ctx, "claim", map[string]any{"job": job, "dataid": dataid, "executor": executor})
}

// Force claims a dataid whatever its inputs and locks, superseding a live
// claim on the output chunk.
func (c *Client) Force(ctx context.Context, job, dataid, executor string) (*Claim, error) {
	return c.claimOp(ctx, "force", map[string]any{"job": job, "dataid": dataid, "executor": executor})
}

// Heartbeat extends a claim's lease and returns its new end.
func (c *Client) Heartbeat(ctx context.Context, token string) (time.Time, error) {
	var out struct {
		Heartbeat struct {
			LeaseExpiresAt time.Time `json:"leaseExpiresAt"`
		}
	}
	err := c.Do(ctx, `mutation($t: String!) { heartbeat(token: $t) { leaseExpiresAt } }`, map[string]any{"t": token}, &out)
	return out.Heartbeat.LeaseExpiresAt, err
}

// Complete ends a claim successfully.
func (c *Client) Complete(ctx context.Context, token string) error {
	return c.Do(ctx, `mutation($t: String!) { complete(token: $t) }`, map[string]any{"t": token}, nil)
}

// Fail ends a claim in failure with reason.
func (c *Client) Fail(ctx context.Context, token, reason string) error {
	return c.Do(ctx, `mutation($t: String!, $r: String) { fail(token: $t, reason: $r) }`, map[string]any{"t": token, "r": reason}, nil)
}

// Release gives a claim back without counting an attempt.
func (c *Client) Release(ctx context.Context, token string) error {
	return c.Do(ctx, `mutation($t: String!) { release(token: $t) }`, map[string]any{"t": token}, nil)
}

// Resubmit asks for a chunk (and, with cascade, everything computed from
// it) to be produced again, and returns the OUTPUT rows it changed.
func (c *Client) Resubmit(ctx context.Context, dataset, dataid string, cascade bool) ([]StatusRow, error) {
	var out struct{ Resubmit []StatusRow }
	err := c.Do(ctx, `mutation($ds: String!, $d: String!, $c: Boolean) { resubmit(dataset: $ds, dataid: $d, cascade: $c) { `+rowFields+` } }`,
		map[string]any{"ds": dataset, "d": dataid, "c": cascade}, &out)
	return out.Resubmit, err
}

// Hold freezes a chunk.
func (c *Client) Hold(ctx context.Context, dataset, dataid, reason string) (StatusRow, error) {
	var out struct{ Hold StatusRow }
	err := c.Do(ctx, `mutation($ds: String!, $d: String!, $r: String) { hold(dataset: $ds, dataid: $d, reason: $r) { `+rowFields+` } }`,
		map[string]any{"ds": dataset, "d": dataid, "r": reason}, &out)
	return out.Hold, err
}

// ChunkFilter selects status rows; every field is optional.
type ChunkFilter struct {
	Dataset, Job, Role, Status, From, To string
	// Limit bounds how many rows are returned (0: all).
	Limit int
}

// Chunks returns the status rows matching f, reading every page.
func (c *Client) Chunks(ctx context.Context, f ChunkFilter) ([]StatusRow, error) {
	vars := map[string]any{"first": 1000}
	if f.Limit > 0 && f.Limit < 1000 {
		vars["first"] = f.Limit // no more rows than wanted
	}
	for k, v := range map[string]string{"dataset": f.Dataset, "job": f.Job, "status": f.Status, "from": f.From, "to": f.To, "role": f.Role} {
		if v != "" {
			vars[k] = v
		}
	}
	const q = `query($dataset: String, $job: String, $role: Role, $status: Status, $from: String, $to: String, $first: Int, $after: String) {
		chunks(dataset: $dataset, job: $job, role: $role, status: $status, from: $from, to: $to, first: $first, after: $after) {
			edges { node { ` + rowFields + ` } } pageInfo { hasNextPage endCursor } } }`
	var rows []StatusRow
	for {
		var out struct {
			Chunks struct {
				Edges []struct {
					Node StatusRow `json:"node"`
				} `json:"edges"`
				PageInfo pageInfo `json:"pageInfo"`
			} `json:"chunks"`
		}
		if err := c.Do(ctx, q, vars, &out); err != nil {
			return nil, err
		}
		for _, e := range out.Chunks.Edges {
			rows = append(rows, e.Node)
			if f.Limit > 0 && len(rows) >= f.Limit {
				return rows, nil
			}
		}
		if !out.Chunks.PageInfo.HasNextPage {
			return rows, nil
		}
		vars["after"] = out.Chunks.PageInfo.EndCursor
	}
}

type pageInfo struct {
	HasNextPage bool   `json:"hasNextPage"`
	EndCursor   string `json:"endCursor"`
}

// Claims returns the live claims of job (of every job when job is "").
func (c *Client) Claims(ctx context.Context, job string) ([]Claim, error) {
	vars := map[string]any{}
	if job != "" {
		vars["job"] = job
	}
	var out struct{ Claims []Claim }
	err := c.Do(ctx, `query($job: String) { claims(job: $job) { token job dataid attempt executor fence leaseExpiresAt
		output { dataset dataid location } inputs { dataset dataid location } env { name value } } }`, vars, &out)
	return out.Claims, err
}

// EventFilter selects events; every field is optional.
type EventFilter struct {
	Dataset, Job, DataID string
}

func (f EventFilter) vars() map[string]any {
	vars := map[string]any{}
	for k, v := range map[string]string{"dataset": f.Dataset, "job": f.Job, "dataid": f.DataID} {
		if v != "" {
			vars[k] = v
		}
	}
	return vars
}

// Events returns one page of events after the cursor after ("" for the
// start), oldest first, and the cursor to continue from ("" when there is
// nothing more yet).
func (c *Client) Events(ctx context.Context, f EventFilter, after string, first int) (events []Event, next string, err error) {
	vars := f.vars()
	vars["first"] = first
	if after != "" {
		vars["after"] = after
	}
	var out struct {
		Events struct {
			Edges []struct {
				Node Event `json:"node"`
			} `json:"edges"`
			PageInfo pageInfo `json:"pageInfo"`
		} `json:"events"`
	}
	if err := c.Do(ctx, `query($dataset: String, $job: String, $dataid: String, $first: Int, $after: String) {
		events(dataset: $dataset, job: $job, dataid: $dataid, first: $first, after: $after) {
			edges { node { `+EventFields+` } } pageInfo { hasNextPage endCursor } } }`, vars, &out); err != nil {
		return nil, "", err
	}
	for _, e := range out.Events.Edges {
		events = append(events, e.Node)
	}
	if out.Events.PageInfo.HasNextPage {
		next = out.Events.PageInfo.EndCursor
	}
	return events, next, nil
}

// AllEvents reads every event matching f, oldest first.
func (c *Client) AllEvents(ctx context.Context, f EventFilter) ([]Event, error) {
	var all []Event
	after := ""
	for {
		page, next, err := c.Events(ctx, f, after, 1000)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		after = next
	}
}

// LockGraph returns the lock graph around a job, a dataset or a dataid
// (each optional).
func (c *Client) LockGraph(ctx context.Context, job, dataset, dataid string) (LockGraph, error) {
	vars := map[string]any{}
	for k, v := range map[string]string{"job": job, "dataset": dataset, "dataid": dataid} {
		if v != "" {
			vars[k] = v
		}
	}
	var out struct {
		LockGraph LockGraph `json:"lockGraph"`
	}
	err := c.Do(ctx, `query($job: String, $dataset: String, $dataid: String) { lockGraph(job: $job, dataset: $dataset, dataid: $dataid) {
		nodes { id kind job dataset dataid status } edges { from to kind locks status mapping { dataset kind startOffset endOffset } } } }`, vars, &out)
	return out.LockGraph, err
}

// Blockers tells why job cannot claim dataid now; empty when it can.
func (c *Client) Blockers(ctx context.Context, job, dataid string) ([]Blocker, error) {
	var out struct{ Blockers []Blocker }
	err := c.Do(ctx, `query($job: String!, $dataid: String!) { blockers(job: $job, dataid: $dataid) { dataset dataid job kind status until pool } }`,
		map[string]any{"job": job, "dataid": dataid}, &out)
	return out.Blockers, err
}

// LockResource takes a READ or WRITE lock on a resource URI for client.
// ttl 0 means the server's default.
func (c *Client) LockResource(ctx context.Context, client, resource, mode string, ttl time.Duration) (ResourceLock, error) {
	vars := map[string]any{"client": client, "resource": resource, "mode": mode}
	if ttl > 0 {
		vars["ttl"] = int((ttl + time.Second - 1) / time.Second)
	}
	var out struct {
		LockResource ResourceLock `json:"lockResource"`
	}
	err := c.Do(ctx, `mutation($client: String!, $resource: String!, $mode: LockMode!, $ttl: Int) {
		lockResource(client: $client, resource: $resource, mode: $mode, ttlSeconds: $ttl) { `+lockFields+` } }`, vars, &out)
	return out.LockResource, err
}

// RenewResource extends a resource lock held by client to ttl from now
// (ttl 0: the server's default).
func (c *Client) RenewResource(ctx context.Context, id, client string, ttl time.Duration) (ResourceLock, error) {
	vars := map[string]any{"id": id, "client": client}
	if ttl > 0 {
		vars["ttl"] = int((ttl + time.Second - 1) / time.Second)
	}
	var out struct {
		RenewResource ResourceLock `json:"renewResource"`
	}
	err := c.Do(ctx, `mutation($id: ID!, $client: String!, $ttl: Int) {
		renewResource(id: $id, client: $client, ttlSeconds: $ttl) { `+lockFields+` } }`, vars, &out)
	return out.RenewResource, err
}

// UnlockResource removes a resource lock held by client.
func (c *Client) UnlockResource(ctx context.Context, id, client string) error {
	return c.Do(ctx, `mutation($id: ID!, $client: String!) { unlockResource(id: $id, client: $client) }`,
		map[string]any{"id": id, "client": client}, nil)
}

// ResourceLocks lists the unexpired resource locks (filters optional).
func (c *Client) ResourceLocks(ctx context.Context, resource, client, mode string) ([]ResourceLock, error) {
	vars := map[string]any{}
	for k, v := range map[string]string{"resource": resource, "client": client, "mode": mode} {
		if v != "" {
			vars[k] = v
		}
	}
	var out struct {
		ResourceLocks []ResourceLock `json:"resourceLocks"`
	}
	err := c.Do(ctx, `query($resource: String, $client: String, $mode: LockMode) { resourceLocks(resource: $resource, client: $client, mode: $mode) { `+lockFields+` } }`, vars, &out)
	return out.ResourceLocks, err
}
