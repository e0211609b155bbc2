package partition

import (
	"math"
	"time"
)

// Spec is a definition as the API and pipeline files spell it: lag and
// deadline in whole seconds.
type Spec struct {
	Kind            Kind     `json:"kind" yaml:"kind"`
	Start           string   `json:"start,omitempty" yaml:"start"`
	End             string   `json:"end,omitempty" yaml:"end"`
	Timezone        string   `json:"timezone,omitempty" yaml:"timezone"`
	Values          []string `json:"values,omitempty" yaml:"values"`
	LagSeconds      int      `json:"lagSeconds" yaml:"lagSeconds"`
	DeadlineSeconds *int     `json:"deadlineSeconds,omitempty" yaml:"deadlineSeconds"`
}

// SpecOf is the spelled-out form of d; nil for none.
func SpecOf(d *Def) *Spec {
	if d == nil {
		return nil
	}
	s := &Spec{Kind: d.Kind, Start: d.Start, End: d.End, Timezone: d.Timezone, Values: d.Values,
		LagSeconds: int(d.Lag / time.Second)}
	if d.Deadline != nil {
		n := int(*d.Deadline / time.Second)
		s.DeadlineSeconds = &n
	}
	return s
}

// Def is the definition s spells out; nil for none.
func (s *Spec) Def() *Def {
	if s == nil {
		return nil
	}
	d := &Def{Kind: s.Kind, Start: s.Start, End: s.End, Timezone: s.Timezone, Values: s.Values,
		Lag: Seconds(s.LagSeconds)}
	if s.DeadlineSeconds != nil {
		deadline := Seconds(*s.DeadlineSeconds)
		d.Deadline = &deadline
	}
	return d
}

// Seconds converts a count of seconds, as the API and pipeline files
// spell lag and deadline, to a duration, saturating at the longest one of
// either sign: a huge count stays huge (and Validate refuses it) rather
// than wrapping around to a small or negative duration.
func Seconds(n int) time.Duration {
	const limit = int(math.MaxInt64 / int64(time.Second))
	return time.Duration(min(max(n, -limit), limit)) * time.Second
}

// Normalized is d as stores keep it: a time kind's empty time zone is UTC,
// and Values is a copy of its own (nil when empty).
func (d Def) Normalized() Def {
	if d.Kind.IsTime() && d.Timezone == "" {
		d.Timezone = "UTC"
	}
	if len(d.Values) == 0 {
		d.Values = nil
	} else {
		d.Values = append([]string(nil), d.Values...)
	}
	return d
}
