package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnknownCommand: a mistyped command is an error that names it and the
// command probably meant, on one line, with exit status 1 (not 3, which
// means "nothing to claim").
func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"stauts":         `unknown command "stauts"; did you mean "status"?`,
		"comlete":        `unknown command "comlete"; did you mean "complete"?`,
		"help stauts":    `unknown command "stauts"; did you mean "status"?`,
		"keys stup":      `keys: unknown command "stup"; did you mean "setup"?`,
		"keys help stup": `keys: unknown command "stup"; did you mean "setup"?`,
		"token nwe":      `token: unknown command "nwe"; did you mean "new"?`,
		"hlep":           `unknown command "hlep"; did you mean "help"?`,
		"frobnicate":     "unknown command \"frobnicate\"; `chunklock --help` lists the commands",
	} {
		var stdout, stderr lockedBuffer
		code := run(t.Context(), append([]string{"chunklock"}, strings.Fields(args)...), &stdout, &stderr)
		require.Equal(t, exitError, code, args)
		require.Equal(t, "chunklock: "+want+"\n", stderr.String(), args)
		require.Empty(t, stdout.String(), args)
	}
}

// TestUnknownFlag: a mistyped flag is one line naming it and the flag
// probably meant, not the message lost above the command's whole help.
func TestUnknownFlag(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"status --jbo x":            `status: unknown flag "--jbo"; did you mean "--job"?`,
		"next --job j --fromat env": `next: unknown flag "--fromat"; did you mean "--format"?`,
		"token new --nmae x":        `token new: unknown flag "--nmae"; did you mean "--name"?`,
		"status --zzzzzz":           "status: unknown flag \"--zzzzzz\"; `chunklock status --help` lists the flags",
		"status -q":                 "status: unknown flag \"-q\"; `chunklock status --help` lists the flags",
		"next":                      "next: Required flag \"job\" not set (see `chunklock next --help`)",
	} {
		var stdout, stderr lockedBuffer
		code := run(t.Context(), append([]string{"chunklock"}, strings.Fields(args)...), &stdout, &stderr)
		require.Equal(t, exitError, code, args)
		require.Equal(t, "chunklock: "+want+"\n", stderr.String(), args)
		require.Empty(t, stdout.String(), args)
	}
}

// TestHelpStillWorks: help with and without a command, for the root and a
// group, alone or as a command.
func TestHelpStillWorks(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"":                "chunklock - coordinate partitioned batch pipelines",
		"help":            "chunklock - coordinate partitioned batch pipelines",
		"h":               "chunklock - coordinate partitioned batch pipelines",
		"--help":          "chunklock - coordinate partitioned batch pipelines",
		"help status":     "chunklock status - show each dataset's chunks",
		"keys":            "chunklock keys - manage job keys",
		"keys help":       "chunklock keys - manage job keys",
		"keys help setup": "chunklock keys setup - prepare Vault",
		"keys setup -h":   "chunklock keys setup - prepare Vault",
	} {
		var stdout, stderr lockedBuffer
		code := run(t.Context(), append([]string{"chunklock"}, strings.Fields(args)...), &stdout, &stderr)
		require.Equal(t, exitOK, code, "%q: %s", args, stderr.String())
		require.Contains(t, stdout.String(), want, args)
		require.Empty(t, stderr.String(), args)
	}
}

func TestClosest(t *testing.T) {
	t.Parallel()
	names := []string{"status", "next", "run", "complete", "chunks", "h", "help"}
	for typed, want := range map[string]string{
		"stauts": "status", "statsu": "status", "stat": "status", "nxt": "next", "nex": "next", "rnu": "run",
		"compelte": "complete", "chunk": "chunks", "hlep": "help",
		"x": "", "q": "", "foo": "", "frobnicate": "", "": "",
	} {
		require.Equal(t, want, closest(typed, names), typed)
	}
	require.Equal(t, 0, editDistance("abc", "abc"))
	require.Equal(t, 1, editDistance("abc", "acb"), "a swap is one edit")
	require.Equal(t, 3, editDistance("", "abc"))
	require.Equal(t, 3, editDistance("kitten", "sitting"))
}

// TestBadFlagValueNamesTheFlagWithTwoDashes: a flag's bad value is
// reported with the flag as the help spells it.
func TestBadFlagValueNamesTheFlagWithTwoDashes(t *testing.T) {
	t.Parallel()
	var stdout, stderr lockedBuffer
	require.Equal(t, 1, run(t.Context(), []string{"chunklock", "chunks", "--limit", "x"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), `invalid value "x" for flag --limit:`)
}
