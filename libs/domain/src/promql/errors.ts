/**
 * A PromQL query's failure, in Prometheus' own error types: `bad_data` (400: the query or a
 * parameter does not parse or type-check), `execution` (422: it parses but cannot be answered,
 * including the parts of PromQL Meridian does not evaluate, and a bound reached), `timeout` and
 * `canceled` (503), `unavailable` (503: the metric store did not answer).
 */
export type PromqlErrorType = 'bad_data' | 'execution' | 'timeout' | 'canceled' | 'unavailable' | 'internal';

export class PromqlError extends Error {
  readonly type: PromqlErrorType;
  constructor(type: PromqlErrorType, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PromqlError';
    this.type = type;
  }
}

export const badData = (message: string) => new PromqlError('bad_data', message);
export const execution = (message: string) => new PromqlError('execution', message);
/** A part of PromQL this engine does not evaluate: refused by name rather than answered wrongly. */
export const unsupported = (what: string) => new PromqlError('execution', `unsupported in Meridian's PromQL: ${what}`);
