// Package pipeline reads pipelines declared as code: a YAML file of
// datasets and jobs that `chunklock apply` makes the server match.
//
//	datasets:
//	  - id: raw-orders
//	    description: orders exported nightly by the shop
//	    url: postgres://shop-db:5432/shop
//	    connection: sslmode=require user=reader
//	    location: "export_date = '{dataid}'"
//	    secret: {env: SHOP_DB_PASSWORD}     # or {file: /run/secrets/shop}
//	jobs:
//	  - id: extract
//	    inputs: [raw-orders]
//	    output: orders
//	    env: {BATCH_SIZE: "5000"}
//	    maxAttempts: 3
//	    leaseSeconds: 120
//
// A secret is never written inline: it is read from an environment variable
// or a file when the pipeline is applied, and encrypted by the server to
// each job that reads or writes the dataset.
package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/backends/partition"
)

// Pipeline is a parsed pipeline file.
type Pipeline struct {
	// Name names the pipeline (prune.go): `chunklock apply` records it as
	// the owner of every object it creates, and `apply --prune` deletes
	// only objects of that name the file no longer declares. "" when the
	// file does not say (Named gives the default).
	Name     string    `yaml:"pipeline"`
	Datasets []Dataset `yaml:"datasets"`
	Jobs     []Job     `yaml:"jobs"`
	// Pools declares named pools of slots that jobs share (pools.go).
	Pools []Pool `yaml:"pools"`

	envAllow envname.Allow // WithEnvAllow
}

// Option changes how Parse reads a pipeline.
type Option func(*Pipeline)

// WithEnvAllow admits in the jobs' env the names of allow although the
// rule on env names refuses them, as a server given the same --env-allow
// does (`chunklock apply --env-allow`).
func WithEnvAllow(allow envname.Allow) Option {
	return func(p *Pipeline) { p.envAllow = allow }
}

// Dataset declares a dataset.
type Dataset struct {
	ID          string     `yaml:"id"`
	Description string     `yaml:"description"`
	URL         string     `yaml:"url"`
	Connection  string     `yaml:"connection"`
	Location    string     `yaml:"location"`
	Secret      *SecretRef `yaml:"secret"`
	// Partitions declares the dataids the dataset is expected to have.
	Partitions *Partitions `yaml:"partitions"`
	// Retention, when set, is how long the dataset's events are kept, in
	// place of the server's --retain-events:
	//
	//	retention: {eventsSeconds: 2592000}   # thirty days; 0: for ever
	Retention *Retention `yaml:"retention"`
}

// Retention is a dataset's own retention of events.
type Retention struct {
	EventsSeconds int `yaml:"eventsSeconds"`
}

// SecretRef says where a dataset's secret comes from: exactly one of Env and File.
type SecretRef struct {
	Env  string `yaml:"env"`
	File string `yaml:"file"`
}

// Job declares a job. Env keeps the file's order; its names must pass
// envname's rule (no PATH, LD_PRELOAD, BASH_ENV, TAR_OPTIONS, CHUNKLOCK_*,
// ...) or be allowed (WithEnvAllow).
type Job struct {
	ID           string    `yaml:"id"`
	Description  string    `yaml:"description"`
	Inputs       []string  `yaml:"inputs"`
	Output       string    `yaml:"output"`
	Env          yaml.Node `yaml:"env"`
	MaxAttempts  int       `yaml:"maxAttempts"`
	LeaseSeconds int       `yaml:"leaseSeconds"`
	// Paused, when the file sets it, pauses or resumes the job; when it
	// does not, apply leaves the job as it is on the server (SPEC §11:
	// pausing is operational state, chunklock pause and resume).
	Paused *bool `yaml:"paused"`

	RetryDelaySeconds    int    `yaml:"retryDelaySeconds"`
	RetryMaxDelaySeconds int    `yaml:"retryMaxDelaySeconds"`
	MaxConcurrent        int    `yaml:"maxConcurrent"`
	Pool                 string `yaml:"pool"`
	// InputMappings maps output dataids to the dataids of inputs read
	// other than one to one (SPEC §9): each {dataset, kind, startOffset,
	// endOffset}.
	InputMappings []backends.InputMapping `yaml:"inputMappings"`

	envAllow envname.Allow // the pipeline's WithEnvAllow
}

// Parse reads and validates a pipeline. Unknown fields are errors, so a
// typo never passes silently. name is used in messages.
func Parse(r io.Reader, name string, opts ...Option) (*Pipeline, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Pipeline
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: the file is empty: declare datasets and jobs", name)
		}
		return nil, yamlError(name, data, err)
	}
	for _, o := range opts {
		o(&p)
	}
	for i := range p.Jobs {
		p.Jobs[i].envAllow = p.envAllow
	}
	if err := p.Validate(); err != nil {
		return nil, placed(name, err)
	}
	return &p, nil
}

// ParseFile reads a pipeline file ("-" is standard input).
func ParseFile(path string, opts ...Option) (*Pipeline, error) {
	if path == "-" {
		return Parse(os.Stdin, "standard input", opts...)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path, opts...)
}

// Datasets lists the datasets the job uses: its inputs, then its output.
func (j Job) Datasets() []string { return append(slices.Clone(j.Inputs), j.Output) }

// EnvVars returns a job's env in file order.
func (j Job) EnvVars() ([]backends.EnvVar, error) {
	if j.Env.Kind == 0 {
		return nil, nil
	}
	if j.Env.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("job %q: env must be a mapping of NAME: value", j.ID)
	}
	var out []backends.EnvVar
	for i := 0; i+1 < len(j.Env.Content); i += 2 {
		k, v := j.Env.Content[i], j.Env.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("job %q: env %s must be a plain value", j.ID, k.Value)
		}
		if err := j.envAllow.Check(k.Value); err != nil {
			return nil, &posError{k.Line, k.Column, fmt.Sprintf("job %q: %v", j.ID, err)}
		}
		out = append(out, backends.EnvVar{Name: k.Value, Value: v.Value})
	}
	return out, nil
}

// Validate checks the pipeline on its own: ids, references, one producer
// per dataset, no cycles, secrets by reference only. It applies the same
// rules as the server, so a pipeline that validates here is not refused
// there for its shape. A job that reads or writes a dataset the file does
// not declare is left to ValidateAgainst, which checks it against the
// server's datasets.
func (p *Pipeline) Validate() error {
	var errs []error
	if p.Name != "" && backends.ValidateID("pipeline", p.Name) != nil {
		errs = append(errs, fmt.Errorf("pipeline name %q is invalid: want 1-63 characters of a-z 0-9 _ . -, starting with a letter or digit", p.Name))
	}
	var ds []backends.Dataset
	seen := map[string]bool{}
	for _, d := range p.Datasets {
		if seen[d.ID] {
			errs = append(errs, fmt.Errorf("dataset %q is declared twice", d.ID))
		}
		seen[d.ID] = true
		bd := d.Backend()
		if err := backends.ValidateDataset(bd); err != nil {
			errs = append(errs, err)
		}
		if s := d.Secret; s != nil && (s.Env == "") == (s.File == "") {
			errs = append(errs, fmt.Errorf("dataset %q: secret needs exactly one of env or file (secrets are never written inline)", d.ID))
		}
		ds = append(ds, bd)
	}
	cat := backends.NewCatalog(ds, nil).WithEnvAllow(p.envAllow)
	jobSeen := map[string]bool{}
	for _, j := range p.Jobs {
		if jobSeen[j.ID] {
			errs = append(errs, fmt.Errorf("job %q is declared twice", j.ID))
			continue
		}
		jobSeen[j.ID] = true
		bj, err := j.Backend()
		if err == nil && !declaresAll(seen, bj) {
			// It reads or writes a dataset another file declared: it is
			// checked against the server's (ValidateAgainst).
			continue
		}
		if err == nil {
			bj, err = cat.ValidateJob(bj)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cat = cat.WithJob(bj)
	}
	errs = append(errs, p.validatePools()...)
	return errors.Join(errs...)
}

// declaresAll tells whether every dataset j reads and writes is one of
// the file's (declared).
func declaresAll(declared map[string]bool, j backends.Job) bool {
	if !declared[j.Output] {
		return false
	}
	for _, in := range j.Inputs {
		if !declared[in] {
			return false
		}
	}
	return true
}

// ValidateAgainst checks that the pipeline can be applied to a server that
// holds datasets and jobs: every job, once the pipeline's datasets and jobs
// replace the server's of the same id, passes the server's own checks (its
// datasets exist, its output has no other producer, no cycle). It lets apply
// refuse a pipeline before changing anything.
func (p *Pipeline) ValidateAgainst(datasets []backends.Dataset, jobs []backends.Job) error {
	ds := map[string]backends.Dataset{}
	for _, d := range datasets {
		ds[d.ID] = d
	}
	for _, d := range p.Datasets {
		ds[d.ID] = d.Backend()
	}
	js := map[string]backends.Job{}
	for _, j := range jobs {
		js[j.ID] = j
	}
	catalog := func() *backends.Catalog {
		dl := make([]backends.Dataset, 0, len(ds))
		for _, d := range ds {
			dl = append(dl, d)
		}
		jl := make([]backends.Job, 0, len(js))
		for _, j := range js {
			jl = append(jl, j)
		}
		return backends.NewCatalog(dl, jl).WithEnvAllow(p.envAllow)
	}
	// Jobs move one at a time, as apply will upsert them: the pipeline's
	// job replaces the server's only when it is applied.
	var errs []error
	for _, j := range p.OrderedJobs() {
		bj, err := j.Backend()
		if err == nil {
			bj, err = catalog().ValidateJob(bj)
		}
		if err != nil {
			errs = append(errs, againstServer{j.ID, err})
			continue
		}
		js[bj.ID] = bj
	}
	return errors.Join(errs...)
}

// againstServer is a job's refusal by the server's checks (ValidateAgainst):
// it names the job once, whether or not the check's message does.
type againstServer struct {
	job string
	err error
}

func (e againstServer) Error() string {
	msg := e.err.Error()
	if strings.HasPrefix(msg, fmt.Sprintf("job %q", e.job)) {
		return msg + " (against the server's pipeline)"
	}
	return fmt.Sprintf("job %q, against the server's pipeline: %s", e.job, msg)
}

func (e againstServer) Unwrap() error { return e.err }

// Partitions is a dataset's partition definition in a pipeline file:
//
//	partitions: {kind: DAILY, start: 2026-01-01, timezone: Europe/Berlin, lagSeconds: 3600, deadlineSeconds: 21600}
type Partitions partition.Spec

// Def is the definition p declares; nil for none.
func (p *Partitions) Def() *partition.Def { return (*partition.Spec)(p).Def() }

// Backend converts a dataset declaration.
func (d Dataset) Backend() backends.Dataset {
	out := backends.Dataset{ID: d.ID, Description: d.Description, URL: d.URL, Connection: d.Connection, Location: d.Location,
		Partitions: d.Partitions.Def()}
	if d.Retention != nil {
		out.Retention = &backends.Retention{EventsSeconds: d.Retention.EventsSeconds}
	}
	return out
}

// Backend converts a job declaration.
func (j Job) Backend() (backends.Job, error) {
	env, err := j.EnvVars()
	if err != nil {
		return backends.Job{}, err
	}
	return backends.Job{
		ID: j.ID, Description: j.Description, Inputs: slices.Clone(j.Inputs), Output: j.Output, Env: env,
		MaxAttempts: j.MaxAttempts, LeaseSeconds: j.LeaseSeconds, Paused: j.PausedOver(false),
		RetryDelaySeconds: j.RetryDelaySeconds, RetryMaxDelaySeconds: j.RetryMaxDelaySeconds,
		MaxConcurrent: j.MaxConcurrent, Pool: j.Pool,
		InputMappings: backends.NormalizedMappings(j.Inputs, j.InputMappings),
	}, nil
}

// PausedOver is the paused state apply stores for the job: the file's when
// it sets paused, else stored, the job's state on the server (false for a
// job not there yet).
func (j Job) PausedOver(stored bool) bool {
	if j.Paused == nil {
		return stored
	}
	return *j.Paused
}

// UnmarshalYAML accepts only {env: NAME} or {file: PATH}: a secret written
// inline is refused with a message that says what to write instead.
func (s *SecretRef) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return &posError{n.Line, n.Column, "secret must be {env: VARIABLE} or {file: PATH}, never the secret itself: chunklock reads it when the pipeline is applied"}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return &posError{v.Line, v.Column, fmt.Sprintf("secret %s must be a plain value", k.Value)}
		}
		switch k.Value {
		case "env":
			s.Env = v.Value
		case "file":
			s.File = v.Value
		default:
			return &posError{k.Line, k.Column, fmt.Sprintf("secret has no field %q; use {env: VARIABLE} or {file: PATH}", k.Value)}
		}
	}
	return nil
}

// ReadSecret resolves a secret reference.
func (s SecretRef) ReadSecret() (string, error) {
	if s.Env != "" {
		v, ok := os.LookupEnv(s.Env)
		if !ok {
			return "", fmt.Errorf("secret environment variable %s is not set", s.Env)
		}
		return v, nil
	}
	b, err := os.ReadFile(s.File)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// Action is what applying does to one object.
type Action string

const (
	Create    Action = "create"
	Update    Action = "update"
	Unchanged Action = "unchanged"
	// Resend: a secret that exists is sent again, since it cannot be read
	// back to compare (it may have been rotated).
	Resend Action = "resend"
)

// Change is one step of a plan.
type Change struct {
	Kind   string // "dataset", "job" or "credential"
	ID     string
	Action Action
	// Fields lists what differs, for updates.
	Fields []string
	// Refused says why a deletion (prune.go) is not made.
	Refused string
}

func (c Change) String() string {
	s := fmt.Sprintf("%-9s %-10s %s", c.Action, c.Kind, c.ID)
	if len(c.Fields) > 0 {
		s += " (" + strings.Join(c.Fields, ", ") + ")"
	}
	if c.Refused != "" {
		s += " REFUSED: " + c.Refused
	}
	return s
}

// Plan compares the pipeline with what the server has and returns the
// changes in the order they must be applied: datasets, then jobs in
// dependency order, then credentials. haveCredential tells which (job,
// dataset) pairs already hold a secret on the server (nil: none). A secret
// cannot be read back to compare, so one that exists is sent again
// (Resend: it may have been rotated).
func (p *Pipeline) Plan(current []backends.Dataset, currentJobs []backends.Job, haveCredential func(job, dataset string) bool) ([]Change, error) {
	haveDS := map[string]backends.Dataset{}
	for _, d := range current {
		haveDS[d.ID] = d
	}
	haveJob := map[string]backends.Job{}
	for _, j := range currentJobs {
		haveJob[j.ID] = j
	}
	var out []Change
	for _, d := range p.Datasets {
		want := d.Backend()
		have, ok := haveDS[d.ID]
		switch {
		case !ok:
			out = append(out, Change{Kind: "dataset", ID: d.ID, Action: Create})
		default:
			var fields []string
			diff := func(name, a, b string) {
				if a != b {
					fields = append(fields, name)
				}
			}
			diff("description", have.Description, want.Description)
			diff("url", have.URL, want.URL)
			diff("connection", have.Connection, want.Connection)
			diff("location", have.Location, want.Location)
			if !samePartitions(have.Partitions, want.Partitions) {
				fields = append(fields, "partitions")
			}
			if !reflect.DeepEqual(have.Retention, want.Retention) {
				fields = append(fields, "retention")
			}
			act := Unchanged
			if len(fields) > 0 {
				act = Update
			}
			out = append(out, Change{Kind: "dataset", ID: d.ID, Action: act, Fields: fields})
		}
	}
	for _, j := range p.OrderedJobs() {
		want, err := j.Backend()
		if err != nil {
			return nil, err
		}
		if want.MaxAttempts == 0 {
			want.MaxAttempts = backends.DefaultMaxAttempts
		}
		if want.LeaseSeconds == 0 {
			want.LeaseSeconds = backends.DefaultLeaseSeconds
		}
		if want.RetryMaxDelaySeconds == 0 {
			want.RetryMaxDelaySeconds = backends.DefaultRetryMaxDelaySeconds
		}
		have, ok := haveJob[j.ID]
		if !ok {
			out = append(out, Change{Kind: "job", ID: j.ID, Action: Create})
			continue
		}
		var fields []string
		if have.Description != want.Description {
			fields = append(fields, "description")
		}
		if !slices.Equal(have.Inputs, want.Inputs) && !(len(have.Inputs) == 0 && len(want.Inputs) == 0) {
			fields = append(fields, "inputs")
		}
		if have.Output != want.Output {
			fields = append(fields, "output")
		}
		if !slices.Equal(have.Env, want.Env) && !(len(have.Env) == 0 && len(want.Env) == 0) {
			fields = append(fields, "env")
		}
		if have.MaxAttempts != want.MaxAttempts {
			fields = append(fields, "maxAttempts")
		}
		if have.LeaseSeconds != want.LeaseSeconds {
			fields = append(fields, "leaseSeconds")
		}
		if j.Paused != nil && have.Paused != want.Paused {
			fields = append(fields, "paused")
		}
		for _, f := range []struct {
			name       string
			have, want any
		}{
			{"retryDelaySeconds", have.RetryDelaySeconds, want.RetryDelaySeconds},
			{"retryMaxDelaySeconds", have.RetryMaxDelaySeconds, want.RetryMaxDelaySeconds},
			{"maxConcurrent", have.MaxConcurrent, want.MaxConcurrent},
			{"pool", have.Pool, want.Pool},
			{"inputMappings", fmt.Sprint(backends.NormalizedMappings(have.Inputs, have.InputMappings)), fmt.Sprint(want.InputMappings)},
		} {
			if f.have != f.want {
				fields = append(fields, f.name)
			}
		}
		act := Unchanged
		if len(fields) > 0 {
			act = Update
		}
		out = append(out, Change{Kind: "job", ID: j.ID, Action: act, Fields: fields})
	}
	for _, c := range p.Credentials() {
		act := Create
		if haveCredential != nil && haveCredential(c.Job, c.Dataset) {
			act = Resend
		}
		out = append(out, Change{Kind: "credential", ID: c.Job + "/" + c.Dataset, Action: act, Fields: []string{"secret from " + c.Ref.String()}})
	}
	return out, nil
}

func (s SecretRef) String() string {
	if s.Env != "" {
		return "$" + s.Env
	}
	return s.File
}

// CredentialRef is a (job, dataset) pair whose secret the pipeline supplies.
type CredentialRef struct {
	Job, Dataset string
	Ref          SecretRef
}

// Credentials lists, for every job, the datasets it uses that declare a secret.
func (p *Pipeline) Credentials() []CredentialRef {
	secret := map[string]*SecretRef{}
	for _, d := range p.Datasets {
		secret[d.ID] = d.Secret
	}
	var out []CredentialRef
	for _, j := range p.OrderedJobs() {
		for _, d := range j.Datasets() {
			if s := secret[d]; s != nil {
				out = append(out, CredentialRef{Job: j.ID, Dataset: d, Ref: *s})
			}
		}
	}
	return out
}

// OrderedJobs returns the jobs so that every job comes after the producers
// of its inputs (the pipeline is acyclic once validated), ties by id.
func (p *Pipeline) OrderedJobs() []Job {
	producer := map[string]string{}
	byID := map[string]Job{}
	for _, j := range p.Jobs {
		producer[j.Output] = j.ID
		byID[j.ID] = j
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out []Job
	done := map[string]bool{}
	var visit func(id string)
	visit = func(id string) {
		if done[id] {
			return
		}
		done[id] = true
		for _, in := range byID[id].Inputs {
			if p := producer[in]; p != "" {
				visit(p)
			}
		}
		out = append(out, byID[id])
	}
	for _, id := range ids {
		visit(id)
	}
	return out
}

// samePartitions tells whether two definitions are the same once the
// server's defaults are applied (partition.Def.Normalized), whatever
// values their DYNAMIC dimensions hold (data, not declaration).
func samePartitions(a, b *partition.Def) bool {
	if a == nil || b == nil {
		return a == b
	}
	return reflect.DeepEqual(a.WithoutMembers().Normalized(), b.WithoutMembers().Normalized())
}
