package backendtest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// Catalog changes (SPEC §11): each change once, with its actor, its time,
// its value before, newest first, paged and filtered.
var catalogChangeTests = []testCase{
	{"CatalogChanges", (*suite).testCatalogChanges},
	{"CatalogChangesPaging", (*suite).testCatalogChangesPaging},
	{"CatalogChangesCredentialRace", (*suite).testCatalogChangesCredentialRace},
}

// want is one expected change: what, on which object, by whom.
type wantChange struct{ op, kind, id, actor string }

// changeLog makes the changes testCatalogChanges lists, each under its
// actor and a second after the one before, and returns them newest first.
func changeLog(t *testing.T, b *bundle) []wantChange {
	as := func(actor string) context.Context {
		b.clock.Advance(time.Second)
		return backends.WithActor(b.ctx, actor)
	}
	_, err := b.s.UpsertDataset(as("alice"), backends.Dataset{ID: "src", Description: "first"})
	require.NoError(t, err)
	_, err = b.s.UpsertDataset(as("bob"), backends.Dataset{ID: "src", Description: "second"})
	require.NoError(t, err)
	_, err = b.s.UpsertDataset(as("alice"), backends.Dataset{ID: "src", Description: "second"})
	require.NoError(t, err, "an upsert that changes nothing")
	_, err = b.s.UpsertDataset(as("alice"), backends.Dataset{ID: "a"})
	require.NoError(t, err)
	_, err = b.s.UpsertJob(as("carol"), backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a"})
	require.NoError(t, err)
	_, err = b.s.UpsertJob(as("carol"), backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a"})
	require.NoError(t, err, "an upsert that changes nothing")
	cred := backends.Credential{Job: "ja", Dataset: "src", KeyKind: "age", Ciphertext: []byte("sealed-secret-1")}
	require.NoError(t, b.s.SetCredential(as("dave"), cred))
	cred.Ciphertext = []byte("sealed-secret-2")
	require.NoError(t, b.s.SetCredential(as("dave"), cred))
	swapped := cred
	swapped.Ciphertext = []byte("sealed-secret-3")
	ok, err := b.s.ReplaceCredential(as("dave"), swapped, cred.Ciphertext)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = b.s.PauseJob(as("alice"), "ja")
	require.NoError(t, err)
	_, err = b.s.PauseJob(as("alice"), "ja")
	require.NoError(t, err, "pausing a paused job changes nothing")
	_, err = b.s.ResumeJob(as("alice"), "ja")
	require.NoError(t, err)
	_, err = b.s.UpsertPool(as("bob"), backends.Pool{ID: "p", Slots: 2})
	require.NoError(t, err)
	_, err = b.s.UpsertPool(as("bob"), backends.Pool{ID: "p", Slots: 2})
	require.NoError(t, err, "an upsert that changes nothing")
	require.NoError(t, b.s.DeletePool(as("bob"), "p"))
	requireCode(t, b.s.DeleteDataset(as("erin"), "src", true), backends.CodeLocked, "a refused change records nothing")
	require.NoError(t, b.s.DeleteJob(as("alice"), "ja"))
	require.NoError(t, b.s.DeleteDataset(as("bob"), "a", true))
	return []wantChange{
		{"deleteDataset", backends.ChangeDataset, "a", "bob"},
		{"deleteJob", backends.ChangeJob, "ja", "alice"},
		{"deletePool", backends.ChangePool, "p", "bob"},
		{"upsertPool", backends.ChangePool, "p", "bob"},
		{"resumeJob", backends.ChangeJob, "ja", "alice"},
		{"pauseJob", backends.ChangeJob, "ja", "alice"},
		{"setCredential", backends.ChangeCredential, "ja/src", "dave"},
		{"setCredential", backends.ChangeCredential, "ja/src", "dave"},
		{"setCredential", backends.ChangeCredential, "ja/src", "dave"},
		{"upsertJob", backends.ChangeJob, "ja", "carol"},
		{"upsertDataset", backends.ChangeDataset, "a", "alice"},
		{"upsertDataset", backends.ChangeDataset, "src", "bob"},
		{"upsertDataset", backends.ChangeDataset, "src", "alice"},
	}
}

func (b *bundle) changes(f backends.ChangeFilter) backends.ChangePage {
	b.t.Helper()
	page, err := b.s.CatalogChanges(b.ctx, f)
	require.NoError(b.t, err)
	return page
}

func summary(cs []backends.CatalogChange) []wantChange {
	out := []wantChange{}
	for _, c := range cs {
		out = append(out, wantChange{c.Op, c.Kind, c.ID, c.Actor})
	}
	return out
}

// beforeField reads one field of a change's value before.
func beforeField(t *testing.T, c backends.CatalogChange, field string) any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(c.Before, &m), "%s %s: before %q", c.Op, c.ID, c.Before)
	return m[field]
}

// testCatalogChanges: each change once, newest first, with its actor,
// time and value before; upserts that change nothing and refused changes
// record nothing; a credential's change names it and holds nothing of it.
func (s *suite) testCatalogChanges(t *testing.T) {
	b := s.setup(t)
	want := changeLog(t, b)
	page := b.changes(backends.ChangeFilter{First: 100})
	require.False(t, page.HasNextPage)
	require.Equal(t, want, summary(page.Changes))
	cs := page.Changes
	last := len(cs) - 1
	// Each step of changeLog is a second after the one before: 18 steps.
	require.Equal(t, epoch.Add(18*time.Second), cs[0].Time.UTC(), "the newest change's time")
	require.Equal(t, epoch.Add(time.Second), cs[last].Time.UTC(), "the oldest change's time")
	for i := 1; i < len(cs); i++ {
		require.True(t, cs[i].Time.Before(cs[i-1].Time), "%s %s is older than %s %s", cs[i].Op, cs[i].ID, cs[i-1].Op, cs[i-1].ID)
	}
	require.Nil(t, cs[last].Before, "a created dataset has no value before")
	require.Equal(t, "first", beforeField(t, cs[last-1], "Description"), "the value before of src's second upsert")
	require.Nil(t, cs[last-3].Before, "a created job has no value before")
	require.Nil(t, cs[8].Before, "the first credential of (ja, src) is created")
	require.Equal(t, "src", beforeField(t, cs[7], "dataset"), "the second replaces one")
	require.Equal(t, "ja", beforeField(t, cs[6], "job"), "the third replaces one (ReplaceCredential)")
	for _, c := range cs[6:9] {
		require.NotContains(t, string(c.Before), "sealed", "a credential's change holds nothing of it")
		require.Equal(t, "ja", c.Job)
		require.Equal(t, "src", c.Dataset)
	}
	require.Equal(t, false, beforeField(t, cs[5], "Paused"), "before the pause")
	require.Equal(t, true, beforeField(t, cs[4], "Paused"), "before the resumption")
	require.EqualValues(t, 2, beforeField(t, cs[2], "Slots"), "the deleted pool")
	require.Equal(t, "ja", beforeField(t, cs[1], "ID"), "the deleted job")
	require.Equal(t, "a", beforeField(t, cs[0], "ID"), "the deleted dataset")

	byDataset := b.changes(backends.ChangeFilter{Dataset: "src", First: 100}).Changes
	require.Equal(t, []wantChange{want[6], want[7], want[8], want[11], want[12]}, summary(byDataset))
	byJob := b.changes(backends.ChangeFilter{Job: "ja", First: 100}).Changes
	require.Equal(t, []wantChange{want[1], want[4], want[5], want[6], want[7], want[8], want[9]}, summary(byJob))
	byActor := b.changes(backends.ChangeFilter{Actor: "bob", First: 100}).Changes
	require.Equal(t, []wantChange{want[0], want[2], want[3], want[11]}, summary(byActor))
	require.Empty(t, b.changes(backends.ChangeFilter{Actor: "erin", First: 100}).Changes, "the refused deletion")
}

// testCatalogChangesPaging: pages of every size hold every change once, in
// order, filtered pages too; first is bounded.
func (s *suite) testCatalogChangesPaging(t *testing.T) {
	b := s.setup(t)
	want := changeLog(t, b)
	for _, f := range []backends.ChangeFilter{{}, {Job: "ja"}} {
		all := summary(b.changes(backends.ChangeFilter{Job: f.Job, First: 100}).Changes)
		for _, size := range []int{1, 2, 5} {
			var got []wantChange
			f.First, f.After = size, ""
			for {
				page := b.changes(f)
				require.LessOrEqual(t, len(page.Changes), size)
				got = append(got, summary(page.Changes)...)
				if !page.HasNextPage {
					break
				}
				f.After = page.Changes[len(page.Changes)-1].Cursor
			}
			require.Equal(t, all, got, "pages of %d, job %q", size, f.Job)
		}
	}
	require.Len(t, want, 13)
	_, err := b.s.CatalogChanges(b.ctx, backends.ChangeFilter{First: backends.MaxChangesPage + 1})
	requireCode(t, err, backends.CodeInvalidArgument)
	_, err = b.s.CatalogChanges(b.ctx, backends.ChangeFilter{First: 10, After: "not a cursor"})
	requireCode(t, err, backends.CodeInvalidArgument)
}

// testCatalogChangesCredentialRace: setters of one credential racing
// record one change each, and exactly one of them as its creation.
func (s *suite) testCatalogChangesCredentialRace(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	const setters = 8
	var wg sync.WaitGroup
	errs := make([]error, setters)
	for i := range setters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := backends.WithActor(b.ctx, fmt.Sprintf("setter-%d", i))
			errs[i] = b.s.SetCredential(ctx, backends.Credential{Job: "ja", Dataset: "src", KeyKind: "age", Ciphertext: []byte(fmt.Sprintf("sealed-%d", i))})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	cs := b.changes(backends.ChangeFilter{Job: "ja", First: 100}).Changes
	created, actors := 0, map[string]bool{}
	for _, c := range cs {
		if c.Op != "setCredential" {
			continue
		}
		actors[c.Actor] = true
		if c.Before == nil {
			created++
		}
	}
	require.Len(t, actors, setters, "one change per setter")
	require.Equal(t, 1, created, "one creation, the others replacements")
}
