import type { DownloadCursor } from './types.ts';

/**
 * The cursor's plain layout: base64url of a JSON array led by a version number, so its layout
 * can change without breaking tokens already handed out. The api never hands this out as is:
 * it seals it (encrypted, authenticated, bound to the user and the query; see the api's
 * cursor-seal.ts), so clients can neither read nor forge it.
 */
const VERSION = 1;

const UINT16_MAX = 0xffff;
const UINT32_MAX = 0xffff_ffff;

export function encodeCursor(c: DownloadCursor): string {
  const fields = [VERSION, c.metric_name, c.ts, c.updated_at, c.partition, c.offset, c.row];
  return Buffer.from(JSON.stringify(fields), 'utf8').toString('base64url');
}

/** The cursor in a token, or null when the token is not one this service wrote (the caller answers 400). */
export function decodeCursor(token: string): DownloadCursor | null {
  if (typeof token !== 'string' || token.length === 0 || token.length > 4096 || !/^[A-Za-z0-9_-]+$/.test(token)) return null;
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(fields) || fields.length !== 7 || fields[0] !== VERSION) return null;
  const [, metricName, ts, updatedAt, partition, offset, row] = fields as unknown[];
  const cursor = { metric_name: metricName, ts, updated_at: updatedAt, partition, offset, row };
  return isCursor(cursor) ? cursor : null;
}

/** True when every field has the type and range of its ClickHouse column (so it can be inlined as a number). */
export function isCursor(c: Record<string, unknown>): c is DownloadCursor {
  return (
    typeof c.metric_name === 'string' &&
    c.metric_name.length > 0 &&
    Number.isSafeInteger(c.ts) &&
    Number.isSafeInteger(c.updated_at) &&
    isIntIn(c.partition, 0, UINT16_MAX) &&
    isIntIn(c.offset, 0, Number.MAX_SAFE_INTEGER) &&
    isIntIn(c.row, 0, UINT32_MAX)
  );
}

function isIntIn(v: unknown, min: number, max: number): boolean {
  return Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max;
}
