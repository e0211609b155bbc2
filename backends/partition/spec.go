package partition

import "time"

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
		Lag: time.Duration(s.LagSeconds) * time.Second}
	if s.DeadlineSeconds != nil {
		deadline := time.Duration(*s.DeadlineSeconds) * time.Second
		d.Deadline = &deadline
	}
	return d
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
