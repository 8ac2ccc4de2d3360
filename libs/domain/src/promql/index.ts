export * from './ast.ts';
export * from './errors.ts';
export * from './durations.ts';
export * from './parse.ts';
export * from './eval.ts';
export * from './plan.ts';
export * from './params.ts';
export * from './format.ts';
export { WINDOW_STATS_FUNCTIONS, evalRangeFunction, evalWindowStats, type WindowBounds, type WindowStats, type WindowStatsFunction } from './functions.ts';
