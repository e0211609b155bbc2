#!/usr/bin/env bash
# Times the statement triggers that keep the chunk counts on PostgreSQL
# (BENCHMARKS.md, "The count triggers"): 20,000 single-row UPDATEs of a
# one-dimensional OUTPUT row, as a claim or a completion makes, under the
# trigger of schema version 13 (totals only), 19 (counts by value through
# counted_values() for every row) and 20 (the totals, then the counts by
# value only for a statement with a multi-dimensional dataid), in
# alternating rounds, in a scratch schema it drops at the end.
#
#   scripts/count-triggers-bench.sh [-dsn DSN] [-rounds 5]
set -euo pipefail
dsn=${CHUNKLOCK_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable} rounds=5
while [ $# -gt 0 ]; do
	case "$1" in
	-dsn) dsn=$2 ;;
	-rounds) rounds=$2 ;;
	-h | -help | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "count-triggers-bench.sh: unknown argument $1 (see -help)" >&2; exit 2 ;;
	esac
	shift 2
done
schema=count_triggers_bench_$$
trap 'psql -q "$dsn" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1' EXIT
psql -q -v ON_ERROR_STOP=1 "$dsn" >/dev/null <<SQL
CREATE SCHEMA $schema;
SET search_path = $schema;
CREATE TABLE status_rows (dataset text, job text, role text, status text, dataid text, PRIMARY KEY (dataset, dataid, role, job));
CREATE TABLE chunk_count_deltas (id bigserial PRIMARY KEY, dataset text, job text, pos smallint NOT NULL DEFAULT 0,
    value text NOT NULL DEFAULT '', status text, n bigint);
INSERT INTO status_rows SELECT 'ds', 'j', 'OUTPUT', 'READY', i::text FROM generate_series(1, 1000) i;
CREATE FUNCTION counted_values(dataid text) RETURNS TABLE (pos smallint, value text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS \$\$
    SELECT 0::smallint, ''::text
    UNION ALL
    SELECT p::smallint, split_part(dataid, '|', p) FROM generate_series(2, 4) AS p
    WHERE strpos(dataid, '|') > 0 AND split_part(dataid, '|', p) <> ''
\$\$;
CREATE FUNCTION v13() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
    INSERT INTO chunk_count_deltas (dataset, job, status, n)
    SELECT dataset, job, status, sum(d) FROM (
        SELECT dataset, job, status, 1 AS d FROM new_rows WHERE role = 'OUTPUT'
        UNION ALL
        SELECT dataset, job, status, -1 AS d FROM old_rows WHERE role = 'OUTPUT') AS x
    GROUP BY 1, 2, 3 HAVING sum(d) <> 0;
    RETURN NULL;
END \$\$;
CREATE FUNCTION v19() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
    INSERT INTO chunk_count_deltas (dataset, job, pos, value, status, n)
    SELECT dataset, job, pos, value, status, sum(d) FROM (
        SELECT r.dataset, r.job, v.pos, v.value, r.status, 1 AS d FROM new_rows r, counted_values(r.dataid) v WHERE r.role = 'OUTPUT'
        UNION ALL
        SELECT r.dataset, r.job, v.pos, v.value, r.status, -1 AS d FROM old_rows r, counted_values(r.dataid) v WHERE r.role = 'OUTPUT') AS x
    GROUP BY 1, 2, 3, 4, 5 HAVING sum(d) <> 0;
    RETURN NULL;
END \$\$;
SQL
# Version 20's function is the migration's own.
sed -n '/^CREATE OR REPLACE FUNCTION chunk_counts_updated/,/^END \$\$;/p' "$(dirname "$0")/../backends/postgres/migrations/0020_value_counts_split.sql" |
	sed 's/SET search_path FROM CURRENT //' | psql -q -v ON_ERROR_STOP=1 "$dsn" -c "SET search_path = $schema" -f - >/dev/null
run() {
	psql -q -v ON_ERROR_STOP=1 "$dsn" 2>/dev/null <<SQL | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
SET search_path = $schema;
DROP TRIGGER IF EXISTS t ON status_rows;
CREATE TRIGGER t AFTER UPDATE ON status_rows REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION $1();
TRUNCATE chunk_count_deltas;
\timing on
DO \$\$ BEGIN FOR i IN 1..20000 LOOP
    UPDATE status_rows SET status = CASE WHEN status = 'READY' THEN 'RUNNING' ELSE 'READY' END
    WHERE dataset = 'ds' AND dataid = ((i % 1000) + 1)::text AND role = 'OUTPUT' AND job = 'j';
END LOOP; END \$\$;
SQL
}
declare -A times
for r in $(seq "$rounds"); do
	for v in v13 v19 chunk_counts_updated; do
		times[$v]+="$(run "$v") "
	done
done
for v in v13 v19 chunk_counts_updated; do
	name=$v
	[ "$v" = chunk_counts_updated ] && name=v20
	printf '%s: %s ms for 20,000 updates; median %s µs an update\n' "$name" "${times[$v]}" \
		"$(echo "${times[$v]}" | tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/20}')"
done
