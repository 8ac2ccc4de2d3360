/**
 * The bounds of one decoded push. The caller (the api's push route) compiles them from its
 * settings; every field left out takes the default beside it. Past a request-wide bound
 * (bytes, series, samples) the whole request is refused; past a per-series bound (labels,
 * label name or value length, line length) only that series or line is, with its reason.
 */
export type ProtocolLimits = {
  /** Bytes of a body once decompressed (snappy, gzip). @default 8 MiB */
  readonly maxBytes: number;
  /** Distinct series a request may write. @default 10,000 */
  readonly maxSeries: number;
  /** Samples (points) a request may hold, written or refused. @default 100,000 */
  readonly maxSamples: number;
  /** Labels of one series, the metric name not counted. @default 32 */
  readonly maxLabels: number;
  /** Characters of a label name. @default 128 */
  readonly maxLabelNameLength: number;
  /** Characters of a label value. @default 256 (the canonical name's own bound, 256, is the tighter in practice) */
  readonly maxLabelValueLength: number;
  /** Bytes of one line of line protocol. @default 64 KiB */
  readonly maxLineLength: number;
  /** Refusals listed one by one (all are counted). @default 100 */
  readonly maxRejectionsListed: number;
};

export const DEFAULT_PROTOCOL_LIMITS: ProtocolLimits = {
  maxBytes: 8 * 1024 * 1024,
  maxSeries: 10_000,
  maxSamples: 100_000,
  maxLabels: 32,
  maxLabelNameLength: 128,
  maxLabelValueLength: 256,
  maxLineLength: 64 * 1024,
  maxRejectionsListed: 100,
};

/** The limits with defaults filled in; a bound that is not a whole number of at least 1 is a programming error. */
export function compileLimits(limits: Partial<ProtocolLimits> = {}): ProtocolLimits {
  const out = { ...DEFAULT_PROTOCOL_LIMITS, ...limits };
  for (const [key, value] of Object.entries(out)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`protocol limit ${key} must be a whole number of at least 1: ${value}`);
  }
  return out;
}
