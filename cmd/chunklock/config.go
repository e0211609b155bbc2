package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"
	"gopkg.in/yaml.v3"
)

// applyConfigFile sets, from the YAML file named by the command's --config
// flag, every flag that neither the command line nor the environment set:
// flags > environment > file > defaults. The file maps flag names to
// values:
//
//	listen: 0.0.0.0:8080
//	store: postgres://chunklock@db:5432/chunklock
//	tokens-file: /etc/chunklock/tokens.yaml
//	reaper-interval: 5s
//	webhook: [https://alerts.example.com/chunklock, https://hooks.example.org/x]
//
// A list sets a repeatable flag once per item.
func applyConfigFile(cmd *cli.Command) error {
	path := cmd.String("config")
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	var values map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&values); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config file %s: want a YAML mapping of flag names to values: %w", path, err)
	}
	var known []string
	for _, f := range cmd.Flags {
		known = append(known, f.Names()[0])
	}
	for name, v := range values {
		if name == "config" || !slices.Contains(known, name) {
			return fmt.Errorf("config file %s: unknown setting %q; known: %s", path, name, strings.Join(slices.DeleteFunc(known, func(k string) bool { return k == "config" || k == "help" }), ", "))
		}
		if cmd.IsSet(name) {
			continue
		}
		if v == nil {
			continue
		}
		items, isList := v.([]any)
		if !isList {
			items = []any{v}
		}
		for _, item := range items {
			if err := cmd.Set(name, fmt.Sprint(item)); err != nil {
				return fmt.Errorf("config file %s: %s: %w", path, name, err)
			}
		}
	}
	return nil
}
