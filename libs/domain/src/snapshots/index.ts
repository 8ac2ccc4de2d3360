export * from './state-codec.ts';
export * from './store.ts';
export * from './document.ts';
