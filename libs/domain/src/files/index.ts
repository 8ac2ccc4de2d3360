export * from './events.ts';
export * from './state.ts';
export * from './access.ts';
export * from './names.ts';
export * from './decide.ts';
export * from './schema-check.ts';
export * from './read-model.ts';
export * from './blob-references.ts';
