/**
 * The projections' pure pieces, shared by the live projectors (apps/ingest) and rebuilds
 * (libs/replay), so a rebuild writes exactly what live ingestion does. Points: whether a
 * PointBatch can be projected and its rows (points/segment.ts; the Native block they become is
 * libs/clickhouse's points/native-block.ts), and the decisions over the points topic (points/state.ts). Tasks: one batch of a tasks partition
 * folded and written through the read model's ports (tasks/project.ts); files: a batch folded onto
 * the stored rows of the files it touches (files/project.ts); both fed by eventsAfter. No I/O of its own:
 * the points table's sink is libs/clickhouse's (createPointsSink); a staged share's refill
 * (points/refill.ts) reads the log and writes the stage through ports it is given.
 */
export { batchProblem, segmentRows, type Segment } from './points/segment.ts';
export { Projection, type Deletion, type Seal, type StagedSeal } from './points/state.ts';
export { refillStage, sealedShare, stageHeader, type Omitted, type RefillDeps, type StageSink } from './points/refill.ts';
export { foldTaskBatch, PendingTaskWrites, projectTaskBatch, writeTaskBatches, type TaskProjection } from './tasks/project.ts';
export { projectFileBatch, type FileProjection } from './files/project.ts';
export { eventsAfter } from './events-after.ts';
