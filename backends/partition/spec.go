package partition

import (
	"math"
	"time"
)

// Spec is a definition as the API and pipeline files spell it: lag and
// deadline in whole seconds.
type Spec struct {
	Kind            Kind     `json:"kind,omitempty" yaml:"kind"`
	Start           string   `json:"start,omitempty" yaml:"start"`
	End             string   `json:"end,omitempty" yaml:"end"`
	Timezone        string   `json:"timezone,omitempty" yaml:"timezone"`
	Values          []string `json:"values,omitempty" yaml:"values"`
	LagSeconds      int      `json:"lagSeconds" yaml:"lagSeconds"`
	DeadlineSeconds *int     `json:"deadlineSeconds,omitempty" yaml:"deadlineSeconds"`
	// Dimensions, instead of Kind, declares a multi-dimensional
	// definition (SPEC §10).
	Dimensions []DimensionSpec `json:"dimensions,omitempty" yaml:"dimensions"`
}

// DimensionSpec is one dimension as the API and pipeline files spell it.
type DimensionSpec struct {
	Name     string   `json:"name" yaml:"name"`
	Kind     Kind     `json:"kind" yaml:"kind"`
	Start    string   `json:"start,omitempty" yaml:"start"`
	End      string   `json:"end,omitempty" yaml:"end"`
	Timezone string   `json:"timezone,omitempty" yaml:"timezone"`
	Values   []string `json:"values,omitempty" yaml:"values"`
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
	if d.Kind == Dimensional {
		s.Kind = ""
	}
	for _, dim := range d.Dimensions {
		s.Dimensions = append(s.Dimensions, DimensionSpec{Name: dim.Name, Kind: dim.Kind, Start: dim.Start, End: dim.End,
			Timezone: dim.Timezone, Values: dim.Values})
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
	if len(s.Dimensions) > 0 {
		if d.Kind == "" {
			d.Kind = Dimensional // with a kind as well, Validate refuses it
		}
		for _, dim := range s.Dimensions {
			d.Dimensions = append(d.Dimensions, Dimension{Name: dim.Name, Def: Def{Kind: dim.Kind, Start: dim.Start,
				End: dim.End, Timezone: dim.Timezone, Values: dim.Values}})
		}
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
	if len(d.Dimensions) > 0 {
		dims := make([]Dimension, len(d.Dimensions))
		for i, dim := range d.Dimensions {
			dims[i] = Dimension{Name: dim.Name, Def: dim.Def.Normalized()}
		}
		d.Dimensions = dims
	}
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
