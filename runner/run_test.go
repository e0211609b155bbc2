package runner

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/client"
	"github.com/chunklock/chunklock/internal/teststores"
)

// storeClient runs the runner against a real (in-memory) store.
type storeClient struct{ s backends.Store }

func (c storeClient) Heartbeat(ctx context.Context, token string) (time.Time, error) {
	cl, err := c.s.Heartbeat(ctx, token)
	if err != nil {
		return time.Time{}, err
	}
	return cl.LeaseExpiresAt, nil
}
func (c storeClient) Complete(ctx context.Context, t string) error { return c.s.Complete(ctx, t) }
func (c storeClient) Fail(ctx context.Context, t, r string) error  { return c.s.Fail(ctx, t, r) }
func (c storeClient) Release(ctx context.Context, t string) error  { return c.s.Release(ctx, t) }
func isStale(err error) bool                                       { return errors.Is(err, backends.ErrStaleClaim) }

type bundle struct {
	store backends.Store
	claim client.Claim
}

func setup(t *testing.T) bundle {
	t.Helper()
	ctx := context.Background()
	s := teststores.Memory(nil)
	for _, d := range []string{"in", "out"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: d, Location: "/" + d + "/{dataid}"})
		require.NoError(t, err)
	}
	_, err := s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out", LeaseSeconds: 3, MaxAttempts: 5})
	require.NoError(t, err)
	_, err = s.Publish(ctx, "in", "7")
	require.NoError(t, err)
	c, err := s.FindNext(ctx, "j", "test")
	require.NoError(t, err)
	require.NotNil(t, c)
	return bundle{store: s, claim: client.Claim{Token: c.Token, Job: c.Job, DataID: c.DataID, Attempt: c.Attempt, LeaseExpiresAt: c.LeaseExpiresAt,
		Output: client.DatasetAccess{Dataset: "out", DataID: "7", Location: "/out/7"}, Inputs: []client.DatasetAccess{{Dataset: "in", DataID: "7", Location: "/in/7"}},
		Env: []client.EnvVar{{Name: "GREETING", Value: "hi"}}}}
}

func status(t *testing.T, s backends.Store, ds string) backends.Status {
	t.Helper()
	ch, err := s.Chunk(context.Background(), ds, "7")
	require.NoError(t, err)
	if ch.Output == nil {
		return backends.StatusNone
	}
	return ch.Output.Status
}

func TestRunCompletesOnExitZero(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var out bytes.Buffer
	got, err := Run(context.Background(), storeClient{b.store}, b.claim, Options{
		Command: []string{"sh", "-c", `echo "$CHUNKLOCK_DATAID $CHUNKLOCK_INPUT_IN_LOCATION $CHUNKLOCK_OUTPUT_LOCATION $GREETING $EXTRA $CHUNKLOCK_JOB"`},
		Env:     []string{"EXTRA=more", "CHUNKLOCK_JOB=spoof"},
		Stdout:  &out, IsStale: isStale,
	})
	require.NoError(t, err)
	require.Equal(t, Completed, got)
	require.Equal(t, "7 /in/7 /out/7 hi more j\n", out.String(), "extra variables come before the claim's, which win")
	require.Equal(t, backends.StatusReady, status(t, b.store, "out"))
}

func TestRunFailsWithStderrTail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got, err := Run(context.Background(), storeClient{b.store}, b.claim, Options{
		Command: []string{"sh", "-c", "echo first >&2; echo 'disk full' >&2; exit 3"},
		Stderr:  &bytes.Buffer{}, IsStale: isStale, TailBytes: 10,
	})
	require.NoError(t, err)
	require.Equal(t, Failed, got)
	ch, err := b.store.Chunk(context.Background(), "out", "7")
	require.NoError(t, err)
	require.Equal(t, backends.StatusFailed, ch.Output.Status)
	require.Contains(t, ch.Output.Reason, "exit status 3")
	require.Contains(t, ch.Output.Reason, "disk full")
	require.NotContains(t, ch.Output.Reason, "first", "only the tail is kept")
}

// TestRunFailsWithoutStderr: a command failing silently is recorded with
// its exit status and that it wrote nothing on stderr.
func TestRunFailsWithoutStderr(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got, err := Run(context.Background(), storeClient{b.store}, b.claim, Options{
		Command: []string{"sh", "-c", "exit 1"}, Stderr: &bytes.Buffer{}, IsStale: isStale,
	})
	require.NoError(t, err)
	require.Equal(t, Failed, got)
	ch, err := b.store.Chunk(context.Background(), "out", "7")
	require.NoError(t, err)
	require.Equal(t, "exit status 1 (nothing on stderr)", ch.Output.Reason)
}

func TestRunStopsChildWhenClaimIsRevoked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	marker := filepath.Join(t.TempDir(), "finished")
	done := make(chan Outcome, 1)
	go func() {
		got, err := Run(context.Background(), storeClient{b.store}, b.claim, Options{
			Command:   []string{"sh", "-c", "sleep 20; touch " + marker},
			Heartbeat: 50 * time.Millisecond, KillGrace: time.Second, IsStale: isStale,
		})
		assert.NoError(t, err)
		done <- got
	}()
	time.Sleep(200 * time.Millisecond)
	forced, err := b.store.Force(context.Background(), "j", "7", "operator")
	require.NoError(t, err)
	select {
	case got := <-done:
		require.Equal(t, Stale, got)
	case <-time.After(15 * time.Second):
		t.Fatal("runner did not stop the process after its claim was superseded")
	}
	_, err = os.Stat(marker)
	require.True(t, os.IsNotExist(err), "the job process must not run to its end")
	// The forced claim is untouched by the stale runner.
	require.NoError(t, b.store.Complete(context.Background(), forced.Token))
}

func TestRunReleasesWhenStopped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Outcome, 1)
	go func() {
		got, err := Run(ctx, storeClient{b.store}, b.claim, Options{Command: []string{"sleep", "20"}, KillGrace: time.Second, IsStale: isStale})
		assert.NoError(t, err)
		done <- got
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case got := <-done:
		require.Equal(t, Released, got)
	case <-time.After(15 * time.Second):
		t.Fatal("runner did not stop")
	}
	require.Equal(t, backends.StatusNone, status(t, b.store, "out"), "release restores the chunk to no row")
}

// TestRunRefusesDangerousEnv: a claim whose job env names a variable that
// changes how processes load or run code, or one of the runner's own
// CHUNKLOCK_*, as a server older than that rule may send, is failed with a
// reason naming each variable, and the process is never started.
func TestRunRefusesDangerousEnv(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	hook, _ := writeHook(t, dir)
	b.claim.Env = append(b.claim.Env,
		client.EnvVar{Name: "BASH_ENV", Value: hook},
		client.EnvVar{Name: "CHUNKLOCK_URL", Value: "http://elsewhere"},
		client.EnvVar{Name: "ld_preload", Value: "/tmp/x.so"})
	got, err := Run(context.Background(), storeClient{b.store}, b.claim, Options{
		Command: []string{"bash", "-c", "touch " + filepath.Join(dir, "started")},
		Env:     []string{"CHUNKLOCK_URL=http://the-server"},
		IsStale: isStale,
	})
	require.Equal(t, Failed, got)
	var envErr *EnvError
	require.ErrorAs(t, err, &envErr)
	require.Len(t, envErr.Errs, 3)
	for _, name := range []string{`"BASH_ENV"`, `"CHUNKLOCK_URL"`, `"ld_preload"`} {
		require.Contains(t, err.Error(), name)
	}
	entries, rerr := os.ReadDir(dir)
	require.NoError(t, rerr)
	require.Len(t, entries, 1, "only hook.sh: neither the process nor the hook ran")

	ch, err := b.store.Chunk(context.Background(), "out", "7")
	require.NoError(t, err)
	require.Equal(t, backends.StatusFailed, ch.Output.Status)
	require.Contains(t, ch.Output.Reason, `env name "BASH_ENV" is not allowed`, "operators see why in the chunk's status")
}

// writeHook writes the executable dir/hook.sh, which leaves the file
// dir/hook-ran behind when it runs, and returns both paths.
func writeHook(t *testing.T, dir string) (hook, ran string) {
	t.Helper()
	hook, ran = filepath.Join(dir, "hook.sh"), filepath.Join(dir, "hook-ran")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+ran+"\n"), 0o755))
	return hook, ran
}

// TestRunRefusesToolSettingEnv: a job env name the rule refuses by family,
// not by name, is refused as well: TAR_OPTIONS makes tar run any command
// (--checkpoint-action=exec), so the claim is failed and tar never runs.
// Told the same name in its allowlist (Options.EnvAllow), the runner passes
// it on: the operator has decided it is safe.
func TestRunRefusesToolSettingEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hook, pwned := writeHook(t, dir)
	tarEnv := client.EnvVar{Name: "TAR_OPTIONS", Value: "--checkpoint=1 --checkpoint-action=exec=" + hook}
	command := []string{"tar", "-cf", filepath.Join(dir, "out.tar"), "-C", dir, "hook.sh"}

	b := setup(t)
	b.claim.Env = append(b.claim.Env, tarEnv)
	got, err := Run(context.Background(), storeClient{b.store}, b.claim, Options{Command: command, IsStale: isStale})
	require.Equal(t, Failed, got)
	require.ErrorContains(t, err, `job j: the runner refuses its env: env name "TAR_OPTIONS" is not allowed: tools read command-line options from it`)
	require.NoFileExists(t, pwned, "TAR_OPTIONS ran a command")
	require.NoFileExists(t, filepath.Join(dir, "out.tar"), "tar was not started")
	ch, err := b.store.Chunk(context.Background(), "out", "7")
	require.NoError(t, err)
	require.Equal(t, backends.StatusFailed, ch.Output.Status)
	require.Contains(t, ch.Output.Reason, `env name "TAR_OPTIONS" is not allowed`)

	allow, err := envname.ParseAllow([]string{"TAR_OPTIONS"})
	require.NoError(t, err)
	b = setup(t)
	b.claim.Env = append(b.claim.Env, tarEnv)
	got, err = Run(context.Background(), storeClient{b.store}, b.claim, Options{Command: command, IsStale: isStale, EnvAllow: allow})
	require.NoError(t, err)
	require.Equal(t, Completed, got)
	require.FileExists(t, pwned, "an allowed name reaches the process")
	require.NoError(t, CheckEnv(b.claim, allow))
	require.Contains(t, Environ(b.claim, allow), "TAR_OPTIONS="+tarEnv.Value)
	require.NotContains(t, strings.Join(Environ(b.claim, envname.Allow{}), "\n"), "TAR_OPTIONS")
}

func TestEnvironAndExports(t *testing.T) {
	t.Parallel()
	secret := "p'w"
	c := client.Claim{Job: "j", DataID: "2026-11-22", Token: "tok", Attempt: 2, Fence: 9,
		Output: client.DatasetAccess{Dataset: "daily.sales", URL: "s3://lake", Location: "s3://lake/dt=2026-11-22/", Secret: &secret},
		Inputs: []client.DatasetAccess{{Dataset: "raw-a"}, {Dataset: "raw-b"}},
		Env: []client.EnvVar{{Name: "X", Value: "1"}, {Name: "CHUNKLOCK_DATAID", Value: "spoof"}, {Name: "CHUNKLOCK_URL", Value: "spoof"},
			{Name: "LD_PRELOAD", Value: "spoof"}, {Name: "lower", Value: "spoof"}}}
	require.ErrorContains(t, CheckEnv(c, envname.Allow{}), `job j: the runner refuses its env: env name "CHUNKLOCK_DATAID" is not allowed`)
	env := strings.Join(Environ(c, envname.Allow{}), "\n")
	require.Contains(t, env, "\nX=1")
	require.Contains(t, env, "CHUNKLOCK_OUTPUT_SECRET=p'w")
	require.Contains(t, env, "CHUNKLOCK_INPUT_1_DATASET=raw-b")
	require.Contains(t, env, "CHUNKLOCK_INPUT_RAW_A_URL=")
	require.Contains(t, env, "CHUNKLOCK_INPUTS=raw-a,raw-b")
	require.Contains(t, env, "CHUNKLOCK_CLAIM_TOKEN=tok")
	require.Contains(t, env, "CHUNKLOCK_FENCE=9")
	require.NotContains(t, env, "CHUNKLOCK_TOKEN=", "CHUNKLOCK_TOKEN is the API token of the chunklock command")
	require.NotContains(t, env, "spoof", "job env cannot override claim variables, nor set refused ones")
	c.Env = c.Env[:1]
	require.NoError(t, CheckEnv(c, envname.Allow{}))
	require.Contains(t, ShellExports(c, envname.Allow{}), `export CHUNKLOCK_OUTPUT_SECRET='p'\''w'`)
}

// TestEnvironMappedInputs: an input read through a mapping has several
// chunks; LOCATIONS and DATAIDS list them, the single-chunk variables name
// the newest, and inputs keep their numbers.
func TestEnvironMappedInputs(t *testing.T) {
	t.Parallel()
	c := client.Claim{Job: "roll", DataID: "2026-11-22",
		Output: client.DatasetAccess{Dataset: "rolling", Location: "s3://lake/rolling/2026-11-22/"},
		Inputs: []client.DatasetAccess{
			{Dataset: "orders", DataID: "2026-11-20", Location: "s3://lake/orders/2026-11-20/"},
			{Dataset: "orders", DataID: "2026-11-21", Location: "s3://lake/orders/2026-11-21/"},
			{Dataset: "orders", DataID: "2026-11-22", Location: "s3://lake/orders/2026-11-22/"},
			{Dataset: "fx", DataID: "2026-11-22", Location: "fx/2026-11-22"},
		}}
	env := Environ(c, envname.Allow{})
	require.Contains(t, env, "CHUNKLOCK_INPUTS=orders,fx")
	require.Contains(t, env, "CHUNKLOCK_INPUT_ORDERS_LOCATIONS=s3://lake/orders/2026-11-20/\ns3://lake/orders/2026-11-21/\ns3://lake/orders/2026-11-22/")
	require.Contains(t, env, "CHUNKLOCK_INPUT_ORDERS_DATAIDS=2026-11-20\n2026-11-21\n2026-11-22")
	require.Contains(t, env, "CHUNKLOCK_INPUT_0_DATAIDS=2026-11-20\n2026-11-21\n2026-11-22")
	require.Contains(t, env, "CHUNKLOCK_INPUT_ORDERS_LOCATION=s3://lake/orders/2026-11-22/")
	require.Contains(t, env, "CHUNKLOCK_INPUT_1_DATASET=fx")
	require.Contains(t, env, "CHUNKLOCK_INPUT_FX_LOCATIONS=fx/2026-11-22")
	require.Contains(t, env, "CHUNKLOCK_INPUT_FX_DATAIDS=2026-11-22")
	require.Contains(t, ShellExports(c, envname.Allow{}), "export CHUNKLOCK_INPUT_ORDERS_DATAIDS='2026-11-20\n2026-11-21\n2026-11-22'")
	for _, kv := range env {
		require.NotContains(t, kv, "CHUNKLOCK_INPUT_2", "two input datasets, numbered 0 and 1")
	}
}

// TestEnvironDimensions: a multi-dimensional chunk's values are exported
// by dimension for the output and each input, and a dataid with '|' is
// quoted in export lines.
func TestEnvironDimensions(t *testing.T) {
	t.Parallel()
	dims := []backends.DimensionValue{{Name: "date", Value: "2026-11-22"}, {Name: "region", Value: "eu"}}
	c := client.Claim{Job: "build", DataID: "2026-11-22|eu",
		Output: client.DatasetAccess{Dataset: "mart", DataID: "2026-11-22|eu", Location: "mart/eu/2026-11-22/", Dimensions: dims},
		Inputs: []client.DatasetAccess{{Dataset: "feeds", DataID: "2026-11-22|eu", Location: "feeds/eu/2026-11-22/", Dimensions: dims}}}
	env := Environ(c, envname.Allow{})
	require.Contains(t, env, "CHUNKLOCK_OUTPUT_DATE=2026-11-22")
	require.Contains(t, env, "CHUNKLOCK_OUTPUT_REGION=eu")
	require.Contains(t, env, "CHUNKLOCK_INPUT_FEEDS_REGION=eu")
	require.Contains(t, env, "CHUNKLOCK_INPUT_0_DATE=2026-11-22")
	require.Contains(t, ShellExports(c, envname.Allow{}), "export CHUNKLOCK_DATAID='2026-11-22|eu'\n")

	// A roll-up of the regions: their day is the chunks', and no region
	// variable stands for all of them (_DATAIDS lists them); a lookback's
	// dates likewise.
	at := func(date, region string) client.DatasetAccess {
		return client.DatasetAccess{Dataset: "feeds", DataID: date + "|" + region, Location: "feeds/" + region + "/" + date + "/",
			Dimensions: []backends.DimensionValue{{Name: "date", Value: date}, {Name: "region", Value: region}}}
	}
	c = client.Claim{Job: "roll-up", DataID: "2026-11-22", Output: client.DatasetAccess{Dataset: "global", DataID: "2026-11-22"},
		Inputs: []client.DatasetAccess{at("2026-11-22", "apac"), at("2026-11-22", "eu"), at("2026-11-22", "us")}}
	env = Environ(c, envname.Allow{})
	require.Contains(t, env, "CHUNKLOCK_INPUT_FEEDS_DATE=2026-11-22")
	require.Contains(t, env, "CHUNKLOCK_INPUT_FEEDS_DATAIDS=2026-11-22|apac\n2026-11-22|eu\n2026-11-22|us")
	c.Inputs = []client.DatasetAccess{at("2026-11-21", "eu"), at("2026-11-22", "eu")}
	env2 := Environ(c, envname.Allow{})
	require.Contains(t, env2, "CHUNKLOCK_INPUT_FEEDS_REGION=eu")
	for _, kv := range append(env, env2...) {
		require.False(t, strings.HasPrefix(kv, "CHUNKLOCK_INPUT_FEEDS_REGION=") && !slices.Contains(env2, kv), kv)
		require.False(t, strings.HasPrefix(kv, "CHUNKLOCK_INPUT_0_REGION=") && !slices.Contains(env2, kv), kv)
	}
	for _, kv := range env2 {
		require.False(t, strings.HasPrefix(kv, "CHUNKLOCK_INPUT_FEEDS_DATE="), kv)
	}
}

// TestStoppedNamesTheSignal: a stopped runner says SIGTERM, not
// "terminated".
func TestStoppedNamesTheSignal(t *testing.T) {
	require.Equal(t, "stopped by SIGTERM", (&Stopped{Signal: syscall.SIGTERM}).Error())
	require.Equal(t, "stopped by SIGINT", (&Stopped{Signal: os.Interrupt}).Error())
}
