package backends

import (
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/backends/partition"
)

// What the catalog accepts: datasets (with their partition definitions),
// jobs (their text, limits and mappings, against the catalog they join),
// pools, and the ids and stored text of every kind (SPEC §1, §8, §9).

// ValidateDataset checks a dataset definition.
func ValidateDataset(d Dataset) error {
	if err := ValidateID("dataset", d.ID); err != nil {
		return err
	}
	if err := ValidatePipeline("dataset", d.ID, d.Pipeline); err != nil {
		return err
	}
	for _, f := range []struct {
		name, text string
		max        int
	}{
		{"description", d.Description, MaxDescriptionBytes},
		{"url", d.URL, MaxLocatorBytes},
		{"connection", d.Connection, MaxLocatorBytes},
		{"location", d.Location, MaxLocatorBytes},
	} {
		if err := ValidText(f.name, f.text, f.max); err != nil {
			return InvalidArgument("dataset %q: %s", d.ID, err.Error())
		}
	}
	if err := checkLocation(d); err != nil {
		return err
	}
	if r := d.Retention; r != nil && (r.EventsSeconds < 0 || r.EventsSeconds > MaxRetentionSeconds) {
		return InvalidArgument("dataset %q: retention: eventsSeconds is 0 (keep for ever) to %d (fifty years), got %d", d.ID, MaxRetentionSeconds, r.EventsSeconds)
	}
	if p := d.Partitions; p != nil {
		if err := p.ValidateNew(); err != nil {
			return InvalidArgument("dataset %q: partitions: %s", d.ID, err.Error())
		}
		if p.Lag > MaxPartitionDelay || (p.Deadline != nil && *p.Deadline > MaxPartitionDelay) {
			return InvalidArgument("dataset %q: partitions: lag and deadline are at most %d seconds (a year)", d.ID, int(MaxPartitionDelay/time.Second))
		}
	}
	return nil
}

// MaxPartitionDelay bounds a partition definition's lag and deadline.
const MaxPartitionDelay = 366 * 24 * time.Hour

// validJobText checks a job's description and env (SPEC §1 Job, Text),
// admitting the env names of allow beyond envname's rule.
func validJobText(j Job, allow envname.Allow) error {
	if err := ValidText("description", j.Description, MaxDescriptionBytes); err != nil {
		return InvalidArgument("job %q: %s", j.ID, err.Error())
	}
	if len(j.Env) > MaxEnvEntries {
		return InvalidArgument("job %q: %d env entries; at most %d", j.ID, len(j.Env), MaxEnvEntries)
	}
	names := map[string]bool{}
	for _, e := range j.Env {
		if err := allow.Check(e.Name); err != nil {
			return InvalidArgument("job %q: %s", j.ID, err.Error())
		}
		if names[e.Name] {
			return InvalidArgument("job %q: env name %q given twice", j.ID, e.Name)
		}
		names[e.Name] = true
		if err := ValidText("env "+e.Name, e.Value, MaxEnvValueBytes); err != nil {
			return InvalidArgument("job %q: %s", j.ID, err.Error())
		}
	}
	return nil
}

// ValidateJob checks a job definition against the catalog and fills in
// defaults. It returns the job to store.
func (c *Catalog) ValidateJob(j Job) (Job, error) {
	if err := ValidateID("job", j.ID); err != nil {
		return Job{}, err
	}
	if err := ValidatePipeline("job", j.ID, j.Pipeline); err != nil {
		return Job{}, err
	}
	if j.Output == "" {
		return Job{}, InvalidArgument("job %q needs an output dataset", j.ID)
	}
	if _, err := c.Dataset(j.Output); err != nil {
		return Job{}, err
	}
	if p := c.Producer(j.Output); p != "" && p != j.ID {
		return Job{}, AlreadyExists("dataset %q is already produced by job %q; a dataset has one producer", j.Output, p)
	}
	seen := map[string]bool{}
	for _, in := range j.Inputs {
		if _, err := c.Dataset(in); err != nil {
			return Job{}, err
		}
		if in == j.Output {
			return Job{}, InvalidArgument("job %q reads its own output %q", j.ID, in)
		}
		if seen[in] {
			return Job{}, InvalidArgument("job %q lists input %q twice", j.ID, in)
		}
		seen[in] = true
	}
	// The new job adds edges input -> output; a cycle exists when the output
	// already reaches one of the inputs through other jobs.
	// Only what is downstream of the output is walked, without the job's
	// own (old) edges.
	for d := range c.downstream(j.Output, j.ID) {
		if seen[d] {
			return Job{}, InvalidArgument("job %q would close a cycle: %q is computed from its output %q", j.ID, d, j.Output)
		}
	}
	if err := validJobText(j, c.envAllow); err != nil {
		return Job{}, err
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = DefaultMaxAttempts
	}
	if j.LeaseSeconds == 0 {
		j.LeaseSeconds = DefaultLeaseSeconds
	}
	if j.MaxAttempts < 1 {
		return Job{}, InvalidArgument("job %q: maxAttempts must be at least 1", j.ID)
	}
	if j.LeaseSeconds < 1 || j.LeaseSeconds > 7*24*3600 {
		return Job{}, InvalidArgument("job %q: leaseSeconds must be between 1 and 604800", j.ID)
	}
	if err := validJobLimits(&j); err != nil {
		return Job{}, err
	}
	if j.Inputs == nil {
		j.Inputs = []string{}
	}
	ms, err := c.validMappings(j)
	if err != nil {
		return Job{}, err
	}
	j.InputMappings = ms
	if err := c.checkDimensionVars(j); err != nil {
		return Job{}, err
	}
	return c.withAcross(j), nil
}

// checkDimensionVars refuses a job for which the runner would set one of
// its variables twice because of a dimension's: the output's
// CHUNKLOCK_OUTPUT_<DIMENSION>, each input's
// CHUNKLOCK_INPUT_<DATASET>_<DIMENSION> and CHUNKLOCK_INPUT_<n>_<DIMENSION>,
// beside the variables every dataset has (input sales-region's
// CHUNKLOCK_INPUT_SALES_REGION_URL against input sales' dimension
// region_url).
func (c *Catalog) checkDimensionVars(j Job) error {
	fields := []string{"DATASET", "URL", "CONNECTION", "LOCATION", "SECRET", "LOCATIONS", "DATAIDS"}
	names := map[string]string{}
	var dims [][2]string // variable, what
	add := func(prefix, dataset string, withDataset bool) {
		for _, f := range fields {
			if f == "DATASET" && !withDataset {
				continue // set under the output's and the numbered prefixes only
			}
			names[prefix+"_"+f] = "the " + f + " of " + dataset
		}
		if def := c.DefOf(dataset); def.Kind == partition.Dimensional {
			for _, d := range def.Dimensions {
				dims = append(dims, [2]string{prefix + "_" + envname.Part(d.Name), "dimension " + d.Name + " of " + dataset})
			}
		}
	}
	add("CHUNKLOCK_OUTPUT", j.Output, true)
	for i, in := range j.Inputs {
		add("CHUNKLOCK_INPUT_"+strconv.Itoa(i), in, true)
		add("CHUNKLOCK_INPUT_"+envname.Part(in), in, false)
	}
	for _, d := range dims {
		if other, ok := names[d[0]]; ok && other != d[1] {
			return InvalidArgument("job %q: the runner would set %s twice, as %s and as %s: rename the dimension", j.ID, d[0], d[1], other)
		}
		names[d[0]] = d[1]
	}
	return nil
}

// MaxRetryDelaySeconds bounds a job's retry delays (a year).
const MaxRetryDelaySeconds = 365 * 24 * 3600

// validJobLimits checks a job's backoff and concurrency settings and fills
// in the default retry cap.
func validJobLimits(j *Job) error {
	if j.RetryMaxDelaySeconds == 0 {
		j.RetryMaxDelaySeconds = DefaultRetryMaxDelaySeconds
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"retryDelaySeconds", j.RetryDelaySeconds}, {"retryMaxDelaySeconds", j.RetryMaxDelaySeconds}} {
		if f.v < 0 || f.v > MaxRetryDelaySeconds {
			return InvalidArgument("job %q: %s must be between 0 and %d", j.ID, f.name, MaxRetryDelaySeconds)
		}
	}
	if j.MaxConcurrent < 0 {
		return InvalidArgument("job %q: maxConcurrent must be at least 1 (0 or none: no limit)", j.ID)
	}
	if j.Pool != "" {
		if err := ValidateID("pool", j.Pool); err != nil {
			return InvalidArgument("job %q: %s", j.ID, err.Error())
		}
	}
	return nil
}

// ValidatePool checks a pool definition.
func ValidatePool(p Pool) error {
	if err := ValidateID("pool", p.ID); err != nil {
		return err
	}
	if err := ValidatePipeline("pool", p.ID, p.Pipeline); err != nil {
		return err
	}
	if p.Slots < 1 {
		return InvalidArgument("pool %q: slots must be at least 1, got %d", p.ID, p.Slots)
	}
	if err := ValidText("description", p.Description, MaxDescriptionBytes); err != nil {
		return InvalidArgument("pool %q: %s", p.ID, err.Error())
	}
	return nil
}

// slugPattern is the form of dataset and job ids.
var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// ValidateID checks a dataset or job id.
func ValidateID(kind, id string) error {
	if !slugPattern.MatchString(id) {
		return InvalidArgument("%s id %q is invalid: want 1-63 characters of a-z 0-9 _ . -, starting with a letter or digit", kind, id)
	}
	return nil
}

// ValidText checks one stored string (SPEC §1 Text): valid UTF-8, no NUL,
// at most max bytes. The error names the field.
func ValidText(field, s string, max int) error {
	switch {
	case len(s) > max:
		return InvalidArgument("%s is %d bytes; at most %d", field, len(s), max)
	case !utf8.ValidString(s):
		return InvalidArgument("%s is not valid UTF-8", field)
	case strings.IndexByte(s, 0) >= 0:
		return InvalidArgument("%s contains a NUL character", field)
	}
	return nil
}

// validMappings checks j's InputMappings against the definitions of its
// datasets in cat and returns them in Inputs order, each with its kind
// spelled out.
func (c *Catalog) validMappings(j Job) ([]InputMapping, error) {
	if err := c.checkDimensionalInputs(j); err != nil {
		return nil, err
	}
	if len(j.InputMappings) == 0 {
		return []InputMapping{}, nil
	}
	byInput := map[string][]InputMapping{}
	for _, m := range j.InputMappings {
		if !containsString(j.Inputs, m.Dataset) {
			return nil, InvalidArgument("job %q: inputMappings names dataset %q, which is not one of its inputs", j.ID, m.Dataset)
		}
		prev := byInput[m.Dataset]
		if len(prev) > 0 && !(m.Named() && prev[0].Named()) {
			return nil, InvalidArgument("job %q: inputMappings names input %q twice (several entries for one input each name its dimension: dimension, outputDimension)", j.ID, m.Dataset)
		}
		byInput[m.Dataset] = append(prev, m)
	}
	for in, ms := range byInput {
		m := ms[0]
		if len(ms) > 1 || m.Named() {
			// A mapping by dimension: its entries together (or a LATEST
			// entry pairing with the output's time dimension: Job.Mapping).
			m = InputMapping{Dataset: in, Mapping: j.Mapping(in)}
		}
		if m.Kind == "" {
			m.Kind = partition.Identity
		}
		if err := c.checkMapping(j.Output, m); err != nil {
			return nil, InvalidArgument("job %q: input %q: %s", j.ID, m.Dataset, err.Error())
		}
	}
	return NormalizedMappings(j.Inputs, j.InputMappings), nil
}

// checkDimensionalInputs checks the inputs j reads without a mapping where
// the output or the input has dimensions: one of the same dimensions is
// read one to one (IDENTITY); others by SPEC §10's rules by name
// (partition.AcrossDimensions: a roll-up, a fan-out), as far as they are
// built.
func (c *Catalog) checkDimensionalInputs(j Job) error {
	outDims := c.DefOf(j.Output).Kind == partition.Dimensional
	derived := c.withAcross(j) // IDENTITY, or SPEC §10's rules by name
	for _, in := range j.Inputs {
		if slices.ContainsFunc(j.InputMappings, func(m InputMapping) bool { return m.Dataset == in }) {
			continue
		}
		if !outDims && c.DefOf(in).Kind != partition.Dimensional {
			continue
		}
		if err := c.checkMapping(j.Output, InputMapping{Dataset: in, Mapping: derived.Mapping(in)}); err != nil {
			return InvalidArgument("job %q: input %q: %s", j.ID, in, err.Error())
		}
	}
	return nil
}

// checkMapping checks one mapping from output to m.Dataset against the
// datasets' definitions in c.
func (c *Catalog) checkMapping(output string, m InputMapping) error {
	if m.Kind == partition.Latest && c.DefOf(m.Dataset).IsZero() {
		return InvalidArgument("LATEST reads the newest READY dataid among those the input's partition definition expects, "+
			"and input %q has no partition definition", m.Dataset)
	}
	err := m.Mapping.Validate(c.DefOf(output), c.DefOf(m.Dataset))
	if err != nil && !errors.Is(err, partition.ErrInvalid) {
		return InvalidArgument("%s", err.Error())
	}
	return err
}

// CheckMappingsOf checks, for a dataset about to take definition d, the
// mappings of the jobs that write or read it: a definition that would leave
// a mapping meaningless (a TIME_WINDOW over a dataset without a time
// definition) is refused.
func (c *Catalog) CheckMappingsOf(d Dataset) error {
	next := c.WithDataset(d)
	check := func(jid string) error {
		j, ok := next.Jobs.Lookup(jid)
		if !ok {
			return nil
		}
		if err := next.checkDimensionalInputs(j); err != nil {
			return InvalidArgument("dataset %q: this definition breaks job %q: %s", d.ID, jid, err.Error())
		}
		if err := next.checkDimensionVars(j); err != nil {
			return InvalidArgument("dataset %q: this definition breaks job %q: %s", d.ID, jid, err.Error())
		}
		checked := map[string]bool{}
		for _, m := range j.InputMappings {
			if m.Dataset != d.ID && j.Output != d.ID || checked[m.Dataset] {
				continue
			}
			checked[m.Dataset] = true
			whole := InputMapping{Dataset: m.Dataset, Mapping: j.Mapping(m.Dataset)} // the entries of a mapping by dimension together
			if err := next.checkMapping(j.Output, whole); err != nil {
				return InvalidArgument("dataset %q: this definition breaks the mapping of job %q on input %q: %s", d.ID, jid, m.Dataset, err.Error())
			}
		}
		return nil
	}
	if p := c.Producer(d.ID); p != "" {
		if err := check(p); err != nil {
			return err
		}
	}
	for _, jid := range c.Consumers(d.ID) {
		if err := check(jid); err != nil {
			return err
		}
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// NormalizedMappings is ms as stores keep it: in the order of inputs (a
// mapping of a dataset not among them last, as given), each kind spelled
// out (IDENTITY for an empty one), and never nil.
func NormalizedMappings(inputs []string, ms []InputMapping) []InputMapping {
	out := make([]InputMapping, 0, len(ms))
	for _, in := range inputs {
		for _, m := range ms {
			if m.Dataset == in {
				out = append(out, m)
			}
		}
	}
	for _, m := range ms {
		if !containsString(inputs, m.Dataset) {
			out = append(out, m)
		}
	}
	for i := range out {
		if out[i].Kind == "" {
			out[i].Kind = partition.Identity
		}
	}
	return out
}

// ValidateExecutor checks an executor name: 1-256 characters of UTF-8
// text without NUL.
func ValidateExecutor(executor string) error {
	if executor == "" || len(executor) > 256 {
		return InvalidArgument("executor must be 1-256 characters")
	}
	if !utf8.ValidString(executor) || strings.ContainsRune(executor, 0) {
		return InvalidArgument("executor must be valid UTF-8 text without NUL")
	}
	return nil
}

// CutReason makes a reason storable anywhere: valid UTF-8 (a job's stderr
// tail may hold any bytes), no NUL, at most MaxReasonBytes, cut on a
// character boundary and keeping the tail, where errors usually are.
func CutReason(reason string) string {
	reason = strings.ReplaceAll(strings.ToValidUTF8(reason, "\uFFFD"), "\x00", "")
	if len(reason) > MaxReasonBytes {
		cut := len(reason) - MaxReasonBytes
		for cut < len(reason) && !utf8.RuneStart(reason[cut]) {
			cut++
		}
		reason = reason[cut:]
	}
	return reason
}
