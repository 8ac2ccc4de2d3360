export * from './events.ts';
export * from './state.ts';
export * from './names.ts';
export * from './keys.ts';
export * from './decide.ts';
export * from './access.ts';
export * from './codec.ts';
