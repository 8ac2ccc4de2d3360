/**
 * V8 flags the api process is started with. Every launcher passes them: deploy/local/run.sh,
 * deploy/compose (Dockerfile and docker-compose.yml), the test and bench process starters; a
 * unit test keeps the shell and Docker files in step with this list.
 *
 * A 1 MB semi-space (V8 grows it to 16 MB or more by default): uploads and downloads stream
 * through the api as short-lived Buffers, and a small young generation collects them soon
 * instead of letting garbage pile up. Measured on the 2-core machine, against no flag:
 * bench-download's peak RSS 188 MB (337 MB) and growth during a 10M-row download 46 MB
 * (81 MB), at the same rates; bench-ingest's RSS while receiving 1 GB at most 253 MB
 * (304–327 MB), at 103 MB/s. 2 MB gave 218 MB, 58 MB and 239–296 MB.
 */
export const API_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1'];

/**
 * The environment the api is started with, beside its flags (glibc reads it before Node runs,
 * so no code of ours can set it). glibc gives each thread that allocates its own malloc arena,
 * up to 8 per core, and an arena keeps what it freed: the JSON upload check's worker threads
 * and libuv's pool allocate body buffers, and the api's RSS kept what they had once used. With
 * two arenas, measured on the 2-core machine after 100 JSON uploads of 10k points (4 at a
 * time): 219 MB against 245–250 MB, and at most 269–271 MB while receiving a 1 GB file
 * after them at 330 MB/s, against 292–320 MB, at the same rates. Ingest runs one thread of
 * ours: the images set it for every process (deploy/compose/Dockerfile).
 */
export const API_NODE_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
