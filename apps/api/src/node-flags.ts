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
