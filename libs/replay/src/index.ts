export { parseBound, BoundError, resolveStarts, resolveEnds, describeOffsets, type Bound } from './bounds.ts';
export { rebuildRange, type RebuildInput, type RebuildStats } from './rebuild.ts';
export { formatProgress, etaMs, type RebuildProgress } from './progress.ts';
export {
  LIVE_POINTS,
  LIVE_CATALOG,
  LIVE_CATALOG_DATA,
  LIVE_SEALS,
  REGISTRY,
  pointsTable,
  sealsTable,
  catalogTable,
  catalogFeed,
  parseGeneration,
  createGeneration,
  listGenerations,
  dropGeneration,
  readRegistry,
  tableEngines,
  foldRegistry,
  type Generation,
  type GenerationListing,
} from './generations.ts';
export { verifyTables, tableChecksums, formatVerification, ROW_HASH, type ComparedTable, type Verification } from './verify.ts';
export { swapIn, freezeLive, unfreeze, nudgeGroup, projectorGroupId, type SwapInput, type SwapResult } from './swap.ts';
export type { ReplayDeps } from './deps.ts';
export { rebuildPoints, swapGeneration, describeBound, type RebuildPointsOptions, type RebuildPointsResult, type SwapMode } from './replay.ts';
export { requestRebuildTask, rebuildTask, type RebuildTask, type RebuildTaskRequest } from './task.ts';
export {
  rebuildReadModel,
  type ReadModelKind,
  type ReadModelRebuildResult,
  type ReadModelSwapMode,
  type ReadModelVerification,
} from './read-models/rebuild.ts';
export { TASKS_READ_MODEL, verifyTasks } from './tasks/rebuild.ts';
export { FILES_READ_MODEL, verifyFiles } from './files/rebuild.ts';
