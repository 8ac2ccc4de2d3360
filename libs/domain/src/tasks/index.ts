export * from './events.ts';
export * from './state.ts';
export * from './unfinished.ts';
export * from './decide.ts';
