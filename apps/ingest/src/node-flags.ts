/**
 * V8 flags the ingest worker is started with. Every launcher passes them: deploy/local/run.sh,
 * deploy/cluster/cluster.sh, deploy/compose/docker-compose.yml, the helm chart, the test and
 * bench process starters; a unit test keeps the shell, compose and chart files in step with this list.
 *
 * An 8 MB semi-space. Left to itself V8 grew the young generation to 64–128 MB committed under
 * the push bench's 64 producers (a semi-space of up to 64 MB, doubled while objects survive),
 * of which 5–30 MB was in use: the largest share of the worker's RSS past its live memory. The
 * worker's short-lived objects are decoded point batches and Kafka fetches, dead within a batch,
 * and its long-lived ones (the rows buffered for the next insert) are promoted whatever the
 * size; 8 MB keeps the young generation at 16–24 MB without promoting what a fetch leaves behind.
 */
export const INGEST_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8'];
