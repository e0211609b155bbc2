-- chunklock schema, version 14: catalog changes (SPEC §11).
--
-- Every change of a dataset, job, pool or credential, written in the
-- transaction of the change: who made it, when, which operation, and the
-- object's value before as JSON, kept as written (NULL when the change created it; for a
-- credential only its job and dataset). Listed newest first (id
-- descending), filtered by dataset, job or actor.
CREATE TABLE catalog_changes (
    id      bigserial   PRIMARY KEY,
    actor   text        NOT NULL,
    at      timestamptz NOT NULL,
    kind    text        NOT NULL,
    object  text        NOT NULL,
    op      text        NOT NULL,
    dataset text        NOT NULL DEFAULT '',
    job     text        NOT NULL DEFAULT '',
    before  json
);
CREATE INDEX catalog_changes_dataset ON catalog_changes (dataset, id) WHERE dataset <> '';
CREATE INDEX catalog_changes_job ON catalog_changes (job, id) WHERE job <> '';
CREATE INDEX catalog_changes_actor ON catalog_changes (actor, id);
