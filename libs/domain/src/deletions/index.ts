export * from './events.ts';
export * from './select.ts';
