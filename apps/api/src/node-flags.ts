/**
 * V8 flags the api process is started with. Every launcher passes them: deploy/local/run.sh,
 * deploy/compose (Dockerfile and docker-compose.yml), the test and bench process starters; a
 * unit test keeps the shell and Docker files in step with this list.
 *
 * A 2 MB semi-space (V8 grows it to 16 MB or more by default): uploads and downloads stream
 * through the api as short-lived Buffers, and a small young generation collects them soon
 * instead of letting garbage pile up. bench-ingest measured the api at 239 MB peak while
 * receiving a 1 GB file (304 MB without the flag), at the same 110 MB/s.
 */
export const API_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2'];
