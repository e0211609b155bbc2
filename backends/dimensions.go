package backends

import (
	"strings"

	"github.com/chunklock/chunklock/backends/partition"
)

// DimensionValue is one dimension's value of a multi-dimensional dataid.
type DimensionValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// DimensionValues splits dataid into its values by dimension of dataset
// d (SPEC §10); nil for a one-dimensional dataset, or a dataid that is not
// one of d's tuples.
func DimensionValues(d Dataset, dataid string) []DimensionValue {
	if d.Partitions == nil || d.Partitions.Kind != partition.Dimensional {
		return nil
	}
	values, ok := d.Partitions.SplitDataID(dataid)
	if !ok {
		return nil
	}
	out := make([]DimensionValue, len(values))
	for i, v := range values {
		out[i] = DimensionValue{Name: d.Partitions.Dimensions[i].Name, Value: v}
	}
	return out
}

// ChunkLocation is dataset d's location template with {dataid} replaced by
// dataid and, for a multi-dimensional dataset, each {name} of a dimension
// by its value: s3://lake/{region}/dt={date}/.
func ChunkLocation(d Dataset, dataid string) string {
	loc := strings.ReplaceAll(d.Location, "{dataid}", dataid)
	for _, v := range DimensionValues(d, dataid) {
		loc = strings.ReplaceAll(loc, "{"+v.Name+"}", v.Value)
	}
	return loc
}

// checkLocation checks that d's location locates a chunk: it holds
// {dataid}, or, for a multi-dimensional dataset, every dimension's {name}.
func checkLocation(d Dataset) error {
	if d.Location == "" || strings.Contains(d.Location, "{dataid}") {
		return nil
	}
	if d.Partitions == nil || d.Partitions.Kind != partition.Dimensional {
		return InvalidArgument("dataset %q: location %q must contain {dataid} to locate a chunk", d.ID, d.Location)
	}
	var missing []string
	for _, dim := range d.Partitions.Dimensions {
		if !strings.Contains(d.Location, "{"+dim.Name+"}") {
			missing = append(missing, "{"+dim.Name+"}")
		}
	}
	if missing != nil {
		return InvalidArgument("dataset %q: location %q must contain {dataid}, or each dimension's placeholder, to locate a chunk: %s missing",
			d.ID, d.Location, strings.Join(missing, ", "))
	}
	return nil
}
