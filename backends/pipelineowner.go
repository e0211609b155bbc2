package backends

// Which pipeline owns a catalog object (SPEC §11: `chunklock apply
// --prune` deletes only what earlier applies of the same pipeline
// created). A dataset, job or pool records the pipeline named by the
// upsert that created it; an upsert of an existing object keeps the owner
// it has, so that an object created otherwise (the API, the playground, a
// file without a pipeline) never becomes a pipeline's to prune, and an
// object one pipeline created is refused to another.

// ValidatePipeline checks the pipeline an upsert names: "" (none) or a
// slug like an id.
func ValidatePipeline(kind, id, pipeline string) error {
	if pipeline == "" {
		return nil
	}
	if !slugPattern.MatchString(pipeline) {
		return InvalidArgument("%s %q: pipeline %q is invalid: want 1-63 characters of a-z 0-9 _ . -, starting with a letter or digit", kind, id, pipeline)
	}
	return nil
}

// PipelineOf returns the owner an upsert of the object kind/id stores:
// the one it names when the object is new (existed false), the stored
// one otherwise. An upsert naming a pipeline other than the stored owner
// is INVALID_ARGUMENT: two pipeline files declare the object.
func PipelineOf(kind, id, named string, existed bool, stored string) (string, error) {
	if !existed {
		return named, nil
	}
	if named != "" && stored != "" && named != stored {
		return "", InvalidArgument("%s %q belongs to pipeline %q, not %q: it was created by an apply of that pipeline; declare it in one pipeline file only (or delete it and apply again)", kind, id, stored, named)
	}
	return stored, nil
}
