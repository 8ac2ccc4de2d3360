/**
 * The points projection's pieces, shared by the live projector (apps/ingest) and rebuilds:
 * what a PointBatch becomes in ClickHouse (rows.ts), the decisions over the points topic
 * (state.ts, pure) and the exactly-once sink of a points table (sink.ts); and the tasks
 * projection's step (../tasks/project.ts).
 */
export * from './rows.ts';
export * from './state.ts';
export * from './sink.ts';
export * from '../tasks/project.ts';
