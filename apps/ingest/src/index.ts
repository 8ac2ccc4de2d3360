export { startIngest, type RunningWorker } from './worker.ts';
