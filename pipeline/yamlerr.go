package pipeline

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	goyaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
	"gopkg.in/yaml.v3"
)

// posError is an error at a place in a pipeline file.
type posError struct {
	line, column int
	msg          string
}

func (e *posError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// yamlError turns an error of yaml.v3 decoding the pipeline file name
// (holding data) into one that starts with file:line: or file:line:column:,
// the way compilers and editors point at a place.
//
// yaml.v3 reports a syntax error at the line where the enclosing block
// starts (line 1 for a mis-indented line anywhere under `datasets:`), not
// where the problem is. The line and column of a syntax error therefore
// come from a second parser, goccy/go-yaml, which points at the token at
// fault; yaml.v3 alone still decides what is valid, and its line stands
// when the two do not agree. yaml.v3's unmarshal errors (an unknown field,
// a duplicate key, a value of the wrong type) carry the right line.
func yamlError(name string, data []byte, err error) error {
	var pe *posError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d:%d: %s", name, pe.line, pe.column, pe.msg)
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			if line, msg := splitLine(m); line > 0 {
				msgs[i] = fmt.Sprintf("%s:%d: %s", name, line, unknownField(msg))
			} else {
				msgs[i] = fmt.Sprintf("%s: %s", name, msg)
			}
		}
		return errors.New(strings.Join(msgs, "\n"))
	}
	line, msg := splitLine(strings.TrimPrefix(err.Error(), "yaml: "))
	if line == 0 {
		return fmt.Errorf("%s: %s", name, msg)
	}
	if l, col, lmsg, ok := locate(data); ok && l >= line {
		return fmt.Errorf("%s:%d:%d: %s\n%s", name, l, col, withHint(lmsg), excerpt(data, l, col))
	}
	return fmt.Errorf("%s:%d: %s\n%s", name, line, withHint(msg), excerpt(data, line, 0))
}

// placed prefixes the errors of Validate with the file name, and the line
// and column of those that have one.
func placed(name string, err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		var pe *posError
		if errors.As(e, &pe) {
			out[i] = fmt.Errorf("%s:%d:%d: %s", name, pe.line, pe.column, pe.msg)
		} else {
			out[i] = fmt.Errorf("%s: %w", name, e)
		}
	}
	return errors.Join(out...)
}

// splitLine splits "line N: message"; N is 0 when there is none.
func splitLine(s string) (int, string) {
	rest, ok := strings.CutPrefix(s, "line ")
	if !ok {
		return 0, s
	}
	n, msg, ok := strings.Cut(rest, ": ")
	line, err := strconv.Atoi(n)
	if !ok || err != nil {
		return 0, s
	}
	return line, msg
}

// locate returns where goccy/go-yaml's parser finds a syntax error in data,
// and its message. It only serves a better message: should that parser
// fail in some other way, even panic, yaml.v3's message stands.
func locate(data []byte) (line, column int, msg string, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, err := parser.ParseBytes(data, 0)
	var ye goyaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil {
		return 0, 0, "", false
	}
	pos := ye.GetToken().Position
	return pos.Line, pos.Column, ye.GetMessage(), true
}

// excerpt shows line of data with the two before it, and a mark under
// column (none when 0).
func excerpt(data []byte, line, column int) string {
	lines := strings.Split(string(data), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	var b strings.Builder
	width := len(strconv.Itoa(line))
	for n := max(1, line-2); n <= line; n++ {
		mark := " "
		if n == line {
			mark = ">"
		}
		fmt.Fprintf(&b, "%s %*d | %s\n", mark, width, n, strings.TrimRight(lines[n-1], "\r"))
	}
	if column > 0 {
		// Tabs before the column stay tabs, so that the mark lines up.
		pad := []byte(lines[line-1][:min(column-1, len(lines[line-1]))])
		for i, c := range pad {
			if c != '\t' {
				pad[i] = ' '
			}
		}
		fmt.Fprintf(&b, "  %*s | %s^\n", width, "", pad)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// withHint adds what to do to the messages of the commonest mistakes.
func withHint(msg string) string {
	switch {
	case strings.Contains(msg, "'\t'") || strings.Contains(msg, "tab character"):
		return "a tab where YAML expects indentation: indent with spaces only"
	case strings.Contains(msg, "in this context") || strings.Contains(msg, "did not find expected"):
		return msg + " (check this line's indentation against the lines above)"
	}
	return msg
}

var fieldNotFound = regexp.MustCompile(`^field (\S+) not found in type pipeline\.(\w+)$`)

// fieldsOf names the places of the file by their Go types, with the fields
// each has.
var fieldsOf = map[string]struct {
	where  string
	fields []string
}{
	"Pipeline": {"at the top level", yamlFields(Pipeline{})},
	"Dataset":  {"in a dataset", yamlFields(Dataset{})},
	"Job":      {"in a job", yamlFields(Job{})},
	"Pool":     {"in a pool", yamlFields(Pool{})},
}

// unknownField rewrites yaml.v3's "field x not found in type pipeline.Job"
// in the words of the file, with the fields there are.
func unknownField(msg string) string {
	m := fieldNotFound.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	f, ok := fieldsOf[m[2]]
	if !ok {
		return msg
	}
	return fmt.Sprintf("unknown field %q %s (the fields are %s)", m[1], f.where, strings.Join(f.fields, ", "))
}

// yamlFields lists the YAML field names of a struct.
func yamlFields(v any) []string {
	t := reflect.TypeOf(v)
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}
