export * from './ast.ts';
export * from './errors.ts';
export * from './durations.ts';
export * from './parse.ts';
export * from './eval.ts';
export * from './plan.ts';
export * from './params.ts';
export * from './format.ts';
export { WINDOW_STATS_FUNCTIONS, evalRangeFunction, type WindowBounds, type WindowStatsFunction } from './functions.ts';
export { foldGroups, seriesStepValues, type ReduceSteps } from './reduce.ts';
export { selectorMetricNames } from './names.ts';
export {
  ROLLUP_FUNCTIONS,
  isRollupFunction,
  rollupBucketMs,
  rollupStepValues,
  type BucketAggregates,
  type RollupFunction,
  type RollupSeries,
} from './rollup-windows.ts';
