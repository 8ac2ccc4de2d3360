export * from './params.ts';
export * from './labels.ts';
export * from './canonical.ts';
