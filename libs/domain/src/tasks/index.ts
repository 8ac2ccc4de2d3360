export * from './events.ts';
export * from './state.ts';
