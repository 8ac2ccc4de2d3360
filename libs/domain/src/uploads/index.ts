export * from './events.ts';
export * from './batcher.ts';
export * from './state.ts';
export * from './decide.ts';
