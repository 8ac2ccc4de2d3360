/**
 * The points projection's pieces, shared by the live projector (apps/ingest) and rebuilds:
 * what a PointBatch becomes in ClickHouse (rows.ts), the decisions over the points topic
 * (state.ts, pure) and the exactly-once sink of a points table (sink.ts); and the read models'
 * steps: tasks (../tasks/project.ts) and files (../files/project.ts), both fed by eventsAfter.
 */
export * from './rows.ts';
export * from './state.ts';
export * from './sink.ts';
export * from '../tasks/project.ts';
export * from '../files/project.ts';
export * from '../events-after.ts';
