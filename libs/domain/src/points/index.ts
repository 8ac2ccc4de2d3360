export { END_TIMESTAMP_MS, formatTimestamp, MIN_TIMESTAMP_MS, parseTimestamp } from './timestamp.ts';
export type { TimestampResult } from './timestamp.ts';
export { MAX_METRIC_NAME_LENGTH, metricNameProblem } from './metric-name.ts';
export { parseValueText, valueProblem } from './value.ts';
export type { ValueResult } from './value.ts';
export { DEFAULT_MAX_UPLOAD_ERRORS, parseUploadBatches } from './parse-upload.ts';
export type { ParseUploadOptions, UploadItem, UploadLayout } from './parse-upload.ts';
export { MAX_CSV_FIELD_LENGTH } from './csv-reader.ts';
export { MAX_LINE_LENGTH as MAX_NDJSON_LINE_LENGTH } from './line-reader.ts';
