export type { DownloadCursor, DownloadFormat, DownloadPlan, DownloadRequest } from './types.ts';
export { decodeCursor, encodeCursor } from './cursor.ts';
export { planDownload, type PlanOptions } from './plan.ts';
export { streamDownload, type DownloadStream, type StreamOptions } from './stream.ts';
export { cancelQueries, cancelQueryPart } from './cancel.ts';
export { rowsInWindow } from './chunks.ts';
export type { ConnOptions } from './http.ts';
export { nameOf, nativePointColumns, type PointColumns } from './native.ts';
