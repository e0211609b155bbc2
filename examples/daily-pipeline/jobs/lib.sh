# Shared by the job scripts: sourced, not run.
set -eu

# chunk_dir PATH creates the directory of a chunk's file.
chunk_dir() { mkdir -p "$(dirname "$1")"; }

# commit TMP FINAL moves a finished result into place, but only while the
# claim is still ours: a job process whose claim expired or was forced by an
# operator (its runner died, or it was too slow) must not overwrite the
# result of the executor that holds the chunk now. `chunklock heartbeat`
# exits 4 when the claim is no longer live.
commit() {
	if ! chunklock heartbeat --quiet; then
		echo "the claim on $CHUNKLOCK_JOB $CHUNKLOCK_DATAID is no longer ours: result discarded" >&2
		rm -f "$1"
		exit 1
	fi
	mv -f "$1" "$2"
}
