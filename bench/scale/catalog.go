package main

import (
	"context"
	"fmt"
	"strings"
)

// createCatalog declares the layout's datasets and jobs through the API,
// a few dozen to a request.
func createCatalog(ctx context.Context, a *api, l layout) error {
	start := l.dataid(0)
	var fields []string
	for i := range l.pairs {
		fields = append(fields,
			fmt.Sprintf(`s%d: upsertDataset(input: {id: %q, url: "s3://lake", location: "s3://lake/%s/hour={dataid}/", partitions: {kind: HOURLY, start: %q, deadlineSeconds: %d}}) { id }`,
				i, l.source(i), l.source(i), start, deadlineSeconds),
			fmt.Sprintf(`p%d: upsertDataset(input: {id: %q, url: "postgres://warehouse:5432/dw", location: "dw.%s WHERE hour = '{dataid}'", partitions: {kind: HOURLY, start: %q}}) { id }`,
				i, l.product(i), strings.ReplaceAll(l.product(i), "-", "_"), start))
	}
	if err := mutateInBatches(ctx, a, fields, 40); err != nil {
		return fmt.Errorf("declaring the datasets: %w", err)
	}
	fields = fields[:0]
	for i := range l.pairs {
		fields = append(fields, fmt.Sprintf(`j%d: upsertJob(input: {id: %q, inputs: [%q], output: %q, leaseSeconds: 600}) { job { id } }`,
			i, l.job(i), l.source(i), l.product(i)))
	}
	if err := mutateInBatches(ctx, a, fields, 40); err != nil {
		return fmt.Errorf("declaring the jobs: %w", err)
	}
	return nil
}

// mutateInBatches sends the aliased mutation fields n to a request.
func mutateInBatches(ctx context.Context, a *api, fields []string, n int) error {
	for i := 0; i < len(fields); i += n {
		doc := "mutation {\n" + strings.Join(fields[i:min(i+n, len(fields))], "\n") + "\n}"
		if err := a.do(ctx, doc, nil, nil); err != nil {
			return err
		}
	}
	return nil
}
