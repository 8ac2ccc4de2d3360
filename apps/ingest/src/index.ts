export { startIngest, type RunningWorker } from './worker.ts';
export { composeIngest } from './compose.ts';
export type { IngestDeps } from './ingest-deps.ts';
