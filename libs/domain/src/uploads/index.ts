export { DEFAULT_MAX_JSON_DOCUMENT_LENGTH, DEFAULT_MAX_UPLOAD_ERRORS, MAX_JSON_NESTING, parseUploadBatches } from './parse.ts';
export type { ParseUploadOptions, UploadItem, UploadLayout } from './parse.ts';
export * from './events.ts';
export * from './batcher.ts';
export * from './batch-bytes.ts';
export * from './state.ts';
export * from './decide.ts';
export * from './whole.ts';
export * from './read.ts';
