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

/** A dependency of the service: the event log, the store of points and read models, the bucket. */
export type Dependency = 'kafka' | 'clickhouse' | 'storage';

/**
 * A dependency that did not do what was asked: not the request's fault. `retriable` says whether
 * asking again may succeed (it was down, slow or busy); the api answers a retriable one 503 with
 * Retry-After and any other 500, and logs both with their `cause`, the client's own error.
 * Adapters throw it where they give up, so callers decide by this type, not by a client's errors.
 */
export class InfrastructureError extends Error {
  readonly dependency: Dependency;
  readonly retriable: boolean;
  constructor(dependency: Dependency, message: string, options: { readonly retriable: boolean; readonly cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = 'InfrastructureError';
    this.dependency = dependency;
    this.retriable = options.retriable;
  }
}

/** A dependency that did not answer in time or at all: asking again later may succeed. */
export const unavailable = (dependency: Dependency, message: string, cause?: unknown) =>
  new InfrastructureError(dependency, message, { retriable: true, cause });
