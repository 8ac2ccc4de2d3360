import { z } from 'zod';
import type { FieldError } from '@meridian/domain';
import { scanJsonUpload } from './json-upload-scan.ts';

/**
 * What the api checks of a JSON upload before it accepts it: well-formed JSON of the shape
 * {"metric_name": string, "values": [...]} with at most the allowed number of values. Every
 * value is validated by the task, not here.
 */
export type JsonUploadCheck =
  | { readonly kind: 'ok'; readonly metric_name: string; readonly values: number }
  | { readonly kind: 'invalid'; readonly message: string; readonly errors: readonly FieldError[] }
  | { readonly kind: 'too_many_values' };

const uploadShape = z.object({ metric_name: z.string(), values: z.array(z.unknown()) });

/** JSON punctuation a value of a well-formed upload needs at most: `{`, the `,` inside it and the `,` after it. */
const PUNCTUATION_PER_VALUE = 4;

/**
 * Parses and checks the body; pure, so it runs on a worker thread (json-check-pool.ts). What
 * JSON.parse allocates grows with the number of JSON values, not with the bytes (`[[],[],...]`
 * makes millions of arrays from a few MB), and a parse cannot be interrupted: so `[`, `{` and
 * `,` are counted first, and a body with more than a JSON upload's values can need is refused
 * unparsed. The parse's memory is then bounded by MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD. A
 * well-formed body is not parsed at all (json-upload-scan.ts, which allocates nothing per value):
 * only a body with something wrong in it is, to say what.
 */
export function checkJsonUpload(bytes: Uint8Array, maxValues: number): JsonUploadCheck {
  // A well-formed body is vouched for without building it; anything else is parsed, to say what is wrong.
  const scanned = scanJsonUpload(bytes);
  if (scanned !== null && 'duplicate' in scanned) {
    return {
      kind: 'invalid',
      message: `the body gives "${scanned.duplicate}" more than once; give it once`,
      errors: [{ field: `body.${scanned.duplicate}`, reason: 'duplicate key' }],
    };
  }
  if (scanned !== null) return scanned.values > maxValues ? { kind: 'too_many_values' } : { kind: 'ok', ...scanned };
  let punctuation = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b === 0x2c || b === 0x5b || b === 0x7b) punctuation++;
  }
  if (punctuation > PUNCTUATION_PER_VALUE * (maxValues + 1)) return { kind: 'too_many_values' };
  return parseJsonUpload(bytes, maxValues);
}

/** The check by JSON.parse and the shape, for a body whose punctuation fits: what checkJsonUpload answers when scanJsonUpload cannot vouch for it. */
export function parseJsonUpload(bytes: Uint8Array, maxValues: number): JsonUploadCheck {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch (error) {
    return { kind: 'invalid', message: `the body is not valid JSON: ${(error as Error).message}`, errors: [{ field: 'body', reason: 'malformed JSON' }] };
  }
  const shape = uploadShape.safeParse(parsed);
  if (!shape.success) {
    return {
      kind: 'invalid',
      message: 'the body must be {"metric_name": string, "values": [...]}',
      errors: shape.error.issues.map((i) => ({ field: ['body', ...i.path.map(String)].join('.'), reason: i.message })),
    };
  }
  if (shape.data.values.length > maxValues) return { kind: 'too_many_values' };
  return { kind: 'ok', metric_name: shape.data.metric_name, values: shape.data.values.length };
}
