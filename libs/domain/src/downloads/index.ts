export * from './params.ts';
export * from './resolve.ts';
