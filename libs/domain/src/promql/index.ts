export * from './ast.ts';
export * from './errors.ts';
export * from './durations.ts';
export * from './parse.ts';
export * from './eval.ts';
export * from './plan.ts';
export * from './params.ts';
export * from './format.ts';
