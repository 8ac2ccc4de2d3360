export * from './events.ts';
export * from './state.ts';
export * from './unfinished.ts';
export * from './decide.ts';
export * from './read-model.ts';
export * from './live.ts';
