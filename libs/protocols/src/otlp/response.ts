import protobuf from 'protobufjs/minimal.js';

/** What an OTLP export answers when it kept only part of a request. */
export type OtlpPartialSuccess = { readonly rejectedDataPoints: number; readonly errorMessage: string };

/**
 * ExportMetricsServiceResponse in the request's encoding: empty when everything was kept, else
 * its partial_success (rejected_data_points, error_message). OTLP/JSON writes int64 as a string.
 */
export function otlpExportResponse(partial: OtlpPartialSuccess | null, format: 'protobuf' | 'json'): Uint8Array | string {
  if (format === 'json')
    return JSON.stringify(
      partial === null ? {} : { partialSuccess: { rejectedDataPoints: String(partial.rejectedDataPoints), errorMessage: partial.errorMessage } },
    );
  const writer = protobuf.Writer.create();
  if (partial !== null) {
    writer.uint32((1 << 3) | 2).fork(); // partial_success
    writer.uint32((1 << 3) | 0).int64(partial.rejectedDataPoints);
    writer.uint32((2 << 3) | 2).string(partial.errorMessage);
    writer.ldelim();
  }
  return writer.finish();
}
