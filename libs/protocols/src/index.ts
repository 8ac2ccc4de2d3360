/**
 * The telemetry protocols Meridian reads: each decoder turns a body (already decompressed, or
 * with its own bounded decompression) into canonically named series and the refusals, pure and
 * within the caller's limits. The routes that receive them are built on the push path.
 */
export type { DecodedPush, DecodedSeries, Rejected } from './decoded.ts';
export { compileLimits, DEFAULT_PROTOCOL_LIMITS } from './limits.ts';
export type { ProtocolLimits } from './limits.ts';
export { snappyUncompressBounded } from './snappy.ts';
export { gunzipBounded } from './gunzip.ts';
export { decodeRemoteWrite, decodeRemoteWriteBody, decodeRemoteWriteV2 } from './remote-write/decode.ts';
export type { RemoteWriteOptions } from './remote-write/decode.ts';
export { SeriesNameCache } from './name-cache.ts';
export type { NamedSeries } from './name-cache.ts';
export { decodeOtlpMetrics } from './otlp/decode.ts';
export type { OtlpFormat } from './otlp/decode.ts';
export { otlpPartialSuccess } from './otlp/to-series.ts';
export type { OtlpDecodedPush } from './otlp/to-series.ts';
export { otlpMetricName } from './otlp/metric-name.ts';
export { decodeInfluxLines, influxPartialWriteMessage, parseInfluxPrecision } from './influx/decode.ts';
export type { InfluxOptions, InfluxPrecision } from './influx/decode.ts';
export { sanitizeLabelName } from './label-names.ts';
export { otlpExportResponse } from './otlp/response.ts';
export type { OtlpPartialSuccess } from './otlp/response.ts';
