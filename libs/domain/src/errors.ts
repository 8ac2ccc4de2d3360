/**
 * Domain errors carry a code; the api maps each code once to an HTTP status and an
 * RFC 9457 problem type. Nothing here knows about HTTP.
 */
export type ErrorCode =
  | 'validation'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  /** A body in a media type the route does not read. */
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'unavailable'
  /** A per-user cap on things at once (uploads, downloads, queued tasks): retry once some finish. */
  | 'too_many'
  /** A per-user cap on things held (API keys, files): free one first. */
  | 'limit_reached';

/** One field-level problem: where (a parameter, a body path, a row and column) and why. */
export type FieldError = { readonly field: string; readonly reason: string; readonly row?: number };

export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly errors: readonly FieldError[];
  constructor(code: ErrorCode, message: string, errors: readonly FieldError[] = [], options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DomainError';
    this.code = code;
    this.errors = errors;
  }
}

export const validationError = (message: string, errors: readonly FieldError[] = []) => new DomainError('validation', message, errors);
export const notFound = (message = 'not found') => new DomainError('not_found', message);
export const forbidden = (message = 'forbidden') => new DomainError('forbidden', message);
export const conflict = (message: string) => new DomainError('conflict', message);
