import { tooLarge } from '../decoded.ts';
import { compileLimits, type ProtocolLimits } from '../limits.ts';
import { readOtlpJson } from './decode-json.ts';
import { readOtlpProtobuf } from './decode-protobuf.ts';
import { otlpToSeries, type OtlpDecodedPush } from './to-series.ts';

/** The two bodies OTLP/HTTP sends: application/x-protobuf and application/json. */
export type OtlpFormat = 'protobuf' | 'json';

/**
 * Decodes an OTLP/HTTP metrics body (`ExportMetricsServiceRequest`, uncompressed) into series,
 * named by the OpenTelemetry-to-Prometheus mapping (to-series.ts). `otlpPartialSuccess` of the
 * result is what the answer's partial_success says.
 */
export function decodeOtlpMetrics(bytes: Uint8Array, format: OtlpFormat, options: Partial<ProtocolLimits> = {}): OtlpDecodedPush {
  const limits = compileLimits(options);
  if (bytes.length > limits.maxBytes) throw tooLarge(`the body is ${bytes.length} bytes, more than ${limits.maxBytes}`);
  const resources = format === 'protobuf' ? readOtlpProtobuf(bytes, limits) : readOtlpJson(bytes, limits);
  return otlpToSeries(resources, limits);
}
