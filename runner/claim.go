// Package runner is the job-runner side of chunklock: the translation of a
// claim (client.Claim) to environment variables for a job's process; Run,
// which supervises one job process under a claim (heartbeats, completion,
// failure, and stopping the process the moment the claim is no longer its
// own); and Loop, a runner's worker loop (claims across jobs in turn, the
// idle wait on the server's events, stop signals, retries of a server that
// cannot be reached), which `chunklock run` runs.
package runner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/client"
)

// EnvName turns a dataset id into the part of a variable name that stands
// for it: upper case, anything but letters and digits becomes '_'.
func EnvName(id string) string { return envname.Part(id) }

// Environ returns the claim as environment variables for the job process:
//
//	CHUNKLOCK_JOB, CHUNKLOCK_DATAID, CHUNKLOCK_ATTEMPT, CHUNKLOCK_EXECUTOR, CHUNKLOCK_FENCE
//	CHUNKLOCK_CLAIM_TOKEN                 the claim token (for chunklock heartbeat/complete/fail/release)
//	CHUNKLOCK_OUTPUT_{DATASET,URL,CONNECTION,LOCATION,SECRET}
//	CHUNKLOCK_INPUTS                      input dataset ids, comma-separated
//	CHUNKLOCK_INPUT_<n>_{DATASET,URL,CONNECTION,LOCATION,SECRET}   n from 0, in job order
//	CHUNKLOCK_INPUT_<DATASET>_{URL,CONNECTION,LOCATION,SECRET}     the same, by dataset id
//	CHUNKLOCK_INPUT_<n>_{LOCATIONS,DATAIDS}, CHUNKLOCK_INPUT_<DATASET>_{LOCATIONS,DATAIDS}
//	                                      every chunk the claim reads of the input, one per
//	                                      line, in dataid order
//
// An input read through a mapping (a lookback, a roll-up, ALL: SPEC §9)
// may have several chunks: LOCATIONS and DATAIDS list them all, and the
// single-chunk variables (LOCATION) name the last of them, the newest.
// An input one to one has one chunk, at CHUNKLOCK_DATAID.
//
// followed by the job's own env entries, but for those allow.Check refuses
// (CHUNKLOCK_* among them, so that the job's env never overrides the
// above): CheckEnv tells whether there are any. SECRET variables are
// present only when the secret was resolved.
//
// The claim token is CHUNKLOCK_CLAIM_TOKEN, not CHUNKLOCK_TOKEN: the latter is
// the API bearer token of the chunklock command, which `eval "$(chunklock
// next --format env)"` must not overwrite.
func Environ(c client.Claim, allow envname.Allow) []string {
	var env []string
	set := func(k, v string) { env = append(env, k+"="+v) }
	set("CHUNKLOCK_JOB", c.Job)
	set("CHUNKLOCK_DATAID", c.DataID)
	set("CHUNKLOCK_CLAIM_TOKEN", c.Token)
	set("CHUNKLOCK_ATTEMPT", strconv.Itoa(c.Attempt))
	set("CHUNKLOCK_EXECUTOR", c.Executor)
	set("CHUNKLOCK_FENCE", strconv.FormatInt(c.Fence, 10))
	// access sets a's variables; a dimension's only when every chunk of
	// same (the chunks read of the same input) has a's value: a roll-up
	// reads every region, a lookback several dates, which _DATAIDS lists.
	access := func(prefix string, a client.DatasetAccess, withDataset bool, same []client.DatasetAccess) {
		if withDataset {
			set(prefix+"_DATASET", a.Dataset)
		}
		set(prefix+"_URL", a.URL)
		set(prefix+"_CONNECTION", a.Connection)
		set(prefix+"_LOCATION", a.Location)
		for i, d := range a.Dimensions {
			if !slices.ContainsFunc(same, func(o client.DatasetAccess) bool { return i >= len(o.Dimensions) || o.Dimensions[i] != d }) {
				set(prefix+"_"+EnvName(d.Name), d.Value)
			}
		}
		if a.Secret != nil {
			set(prefix+"_SECRET", *a.Secret)
		}
	}
	access("CHUNKLOCK_OUTPUT", c.Output, true, nil)
	// The chunks of each input dataset, in the order of the first of them
	// (inputs come in job order, each input's chunks in dataid order).
	var ids []string
	chunks := map[string][]client.DatasetAccess{}
	for _, in := range c.Inputs {
		if _, ok := chunks[in.Dataset]; !ok {
			ids = append(ids, in.Dataset)
		}
		chunks[in.Dataset] = append(chunks[in.Dataset], in)
	}
	for i, id := range ids {
		cs := chunks[id]
		locations := make([]string, len(cs))
		dataids := make([]string, len(cs))
		for j, a := range cs {
			locations[j], dataids[j] = a.Location, a.DataID
		}
		for _, v := range []struct {
			prefix      string
			withDataset bool
		}{{fmt.Sprintf("CHUNKLOCK_INPUT_%d", i), true}, {"CHUNKLOCK_INPUT_" + EnvName(id), false}} {
			access(v.prefix, cs[len(cs)-1], v.withDataset, cs)
			set(v.prefix+"_LOCATIONS", strings.Join(locations, "\n"))
			set(v.prefix+"_DATAIDS", strings.Join(dataids, "\n"))
		}
	}
	set("CHUNKLOCK_INPUTS", strings.Join(ids, ","))
	for _, e := range c.Env {
		if allow.Check(e.Name) != nil {
			continue
		}
		set(e.Name, e.Value)
	}
	return env
}

// EnvError is the error of a claim whose job env names variables that
// the runner refuses (see CheckEnv).
type EnvError struct {
	Job  string
	Errs []error // one per refused name
}

func (e *EnvError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("job %s: the runner refuses its env: %s", e.Job, strings.Join(msgs, "; "))
}

// CheckEnv returns an *EnvError if the claim's job env names a variable
// that envname's rule refuses and allow, the runner's own allowlist, does
// not list: one that changes how a process loads or runs code, or one of
// the runner's own CHUNKLOCK_*. The server refuses such a job, but a
// server older than the rule, or one whose operator allows more than this
// runner's, may still send one: the runner never takes its allowlist from
// the server.
func CheckEnv(c client.Claim, allow envname.Allow) error {
	var errs []error
	for _, e := range c.Env {
		if err := allow.Check(e.Name); err != nil {
			errs = append(errs, err)
		}
	}
	if errs != nil {
		return &EnvError{Job: c.Job, Errs: errs}
	}
	return nil
}

// ShellExports renders Environ as `export NAME='value'` lines for `eval`.
func ShellExports(c client.Claim, allow envname.Allow) string {
	env := Environ(c, allow)
	var b strings.Builder
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s=%s\n", k, ShellQuote(v))
	}
	return b.String()
}

// ShellQuote quotes s for POSIX shells.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
