package main

// Usage errors: a mistyped command or flag is an error that says what was
// not understood and, when a name is close, which one was probably meant.

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/urfave/cli/v3"
)

// checkUsage makes every command below root, root included, refuse what
// it does not know: a command that only groups others gets an action that
// refuses an unknown command name (the library would take it for a help
// topic) and a help command that does the same, and every command turns
// flag errors into one line with a suggestion.
func checkUsage(root *cli.Command) {
	_ = root.Walk(func(cmd *cli.Command) error {
		cmd.OnUsageError = usageError
		if len(cmd.Commands) > 0 {
			if cmd.Action == nil {
				cmd.Action = groupAction
			}
			if cmd.Command("help") == nil {
				cmd.Commands = append(cmd.Commands, helpCommand())
			}
		}
		return nil
	})
}

// groupAction is the action of a command that only groups others: alone it
// shows its help; followed by anything, that is an unknown command.
func groupAction(_ context.Context, cmd *cli.Command) error {
	if name := cmd.Args().First(); name != "" {
		return unknownCommand(cmd, name)
	}
	return showHelp(cmd)
}

func showHelp(cmd *cli.Command) error {
	if cmd.Root() == cmd {
		return cli.ShowRootCommandHelp(cmd)
	}
	return cli.ShowSubcommandHelp(cmd)
}

// helpCommand replaces the library's help command, which answers an
// unknown name with "No help topic" and the exit status of `next` with
// nothing to claim.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Aliases:   []string{"h"},
		Usage:     "show the commands, or the help of one command",
		ArgsUsage: "[command]",
		HideHelp:  true,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			group := cmd.Lineage()[1]
			name := cmd.Args().First()
			switch {
			case name == "":
				return showHelp(group)
			case group.Command(name) == nil:
				return unknownCommand(group, name)
			}
			return cli.ShowCommandHelp(ctx, group, name)
		},
	}
}

// unknownCommand is the error of a command name that group does not have.
func unknownCommand(group *cli.Command, name string) error {
	names := []string{"help"}
	for _, c := range group.VisibleCommands() {
		names = append(names, c.Names()...)
	}
	msg := fmt.Sprintf("%sunknown command %q", where(group), name)
	if s := closest(name, names); s != "" {
		return fmt.Errorf("%s; did you mean %q?", msg, s)
	}
	return fmt.Errorf("%s; `%s --help` lists the commands", msg, group.FullName())
}

// flagOneDash finds a long flag named with one dash in the flag library's
// messages ("invalid value ... for flag -retain-events").
var flagOneDash = regexp.MustCompile(`for flag -([a-z][a-z0-9-]+)`)

// usageError is every command's OnUsageError: one line, with a suggestion
// for an unknown flag, instead of the message followed by the whole help.
func usageError(_ context.Context, cmd *cli.Command, err error, _ bool) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		// The flag library names a flag with one dash; the help and the
		// README spell long flags with two.
		msg := flagOneDash.ReplaceAllString(err.Error(), "for flag --$1")
		return fmt.Errorf("%s%s (see `%s --help`)", where(cmd), msg, cmd.FullName())
	}
	var names []string
	for _, f := range cmd.Flags {
		names = append(names, f.Names()...)
	}
	name = strings.TrimLeft(name, "-")
	msg := fmt.Sprintf("%sunknown flag %q", where(cmd), flagName(name))
	if s := closest(name, names); s != "" {
		return fmt.Errorf("%s; did you mean %q?", msg, flagName(s))
	}
	return fmt.Errorf("%s; `%s --help` lists the flags", msg, cmd.FullName())
}

// where prefixes a message with the command's path below the root
// ("keys setup: "), since the root's name starts every error line.
func where(cmd *cli.Command) string {
	if path := cmd.Path(); len(path) > 1 {
		return strings.Join(path[1:], " ") + ": "
	}
	return ""
}

// flagName spells a flag as it is typed: -h, --job.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// closest returns the name nearest to typed, or "" if none is near enough
// to be what was meant: within one edit (a swap of two neighbours counts
// as one) per three characters typed, rounded up, and not all of them.
func closest(typed string, names []string) string {
	best, bestD := "", min((len(typed)+2)/3+1, len(typed))
	for _, n := range names {
		if d := editDistance(typed, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent bytes.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
