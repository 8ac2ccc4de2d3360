import { Readable } from 'node:stream';
import type { Context } from 'koa';
import { DomainError, InfrastructureError, PromqlError, type PromqlErrorType } from '@meridian/domain';
import type { Logger } from '@meridian/observability';

/**
 * Prometheus' JSON envelope (web/api/v1/api.go): {"status":"success","data":…} or
 * {"status":"error","errorType":…,"error":…} with the status code Prometheus gives each type,
 * so Grafana and Prometheus' own clients read errors as they read Prometheus'.
 */
const STATUS: Record<PromqlErrorType, number> = { bad_data: 400, execution: 422, timeout: 503, canceled: 499, unavailable: 503, internal: 500 };

export function answer(ctx: Context, data: unknown): void {
  ctx.status = 200;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { status: 'success', data };
}

const SUCCESS_OPEN = Buffer.from('{"status":"success","data":');
const SUCCESS_CLOSE = Buffer.from('}');

/**
 * The same answer with its data as UTF-8 JSON in chunks (queryDataJsonChunks), sent as they are
 * written. An answer of one chunk (a dashboard's few series) goes as one body with its length:
 * one write with the headers instead of a stream's several, each a wake-up of the client.
 */
export function answerJson(ctx: Context, dataJson: Iterable<Uint8Array>): void {
  ctx.status = 200;
  ctx.set('Cache-Control', 'no-store');
  ctx.type = 'application/json';
  const chunks = dataJson[Symbol.iterator]();
  const first = chunks.next();
  const second = first.done ? first : chunks.next();
  if (second.done) {
    ctx.body = Buffer.concat(first.done ? [SUCCESS_OPEN, SUCCESS_CLOSE] : [SUCCESS_OPEN, first.value, SUCCESS_CLOSE]);
    return;
  }
  ctx.body = Readable.from(
    (function* () {
      yield SUCCESS_OPEN;
      yield first.value as Uint8Array;
      yield second.value;
      yield* { [Symbol.iterator]: () => chunks };
      yield SUCCESS_CLOSE;
    })(),
  );
}

function writeError(ctx: Context, type: PromqlErrorType, message: string): void {
  ctx.status = STATUS[type];
  ctx.set('Cache-Control', 'no-store');
  if (type === 'unavailable' || type === 'timeout') ctx.set('Retry-After', '1');
  ctx.body = { status: 'error', errorType: type, error: message };
}

/**
 * Runs a handler and answers its failure in Prometheus' shape: PromQL errors by their type,
 * the api's own (the metric store unavailable, a body too large) by the nearest Prometheus
 * type, anything else as internal with the details only in the log.
 */
export async function inEnvelope(ctx: Context, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    if (error instanceof PromqlError) return writeError(ctx, error.type, error.message);
    if (error instanceof InfrastructureError && error.retriable) return writeError(ctx, 'unavailable', error.message);
    if (error instanceof DomainError) {
      if (error.code === 'unavailable') return writeError(ctx, 'unavailable', error.message);
      if (error.code === 'validation') return writeError(ctx, 'bad_data', error.message);
      // Auth, rate limits, body size and media type keep the api's problem answers and statuses.
      throw error;
    }
    (ctx.state.log as Logger).error({ err: error }, 'PromQL request failed');
    writeError(ctx, 'internal', 'an internal error occurred; see the logs with this request id');
  }
}
