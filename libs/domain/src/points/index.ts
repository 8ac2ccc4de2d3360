export { END_TIMESTAMP_MS, formatTimestamp, MIN_TIMESTAMP_MS, parseTimestamp } from './timestamp.ts';
export type { TimestampResult } from './timestamp.ts';
export { MAX_METRIC_NAME_LENGTH, metricNameProblem } from './metric-name.ts';
export { parseValueText, valueProblem } from './value.ts';
export type { ValueResult } from './value.ts';
export { DEFAULT_MAX_LINE_LENGTH } from './line-reader.ts';
export { DEFAULT_MAX_COLUMNS } from './csv-reader.ts';
export { compareCodePoints, escapeLabelValue, labelNameProblem, parseSeriesName, seriesName } from './series-name.ts';
export type { Label, ParsedSeriesName, SeriesNameResult } from './series-name.ts';
