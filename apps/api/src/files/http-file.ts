import { sanitizeFileName } from '@meridian/domain';

/**
 * The HTTP details of serving a stored file: Content-Disposition (RFC 6266 with an RFC 5987
 * `filename*`), entity-tag matching (RFC 9110 §13.1) and single byte ranges (RFC 9110 §14).
 */

// RFC 5987 attr-char: ALPHA / DIGIT / "!" / "#" / "$" / "&" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~"
const encodeExtValue = (s: string) => encodeURIComponent(s).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * `attachment; filename="<ASCII stand-in>"; filename*=UTF-8''<percent-encoded>`. The name
 * loses any directory and control characters first. Clients that read filename* (every
 * current browser, curl -J, requests users through it) get the name exactly; the quoted
 * stand-in is for older ones: accents dropped (é → e), then every other non-ASCII character,
 * quote, backslash and percent sign becomes "_".
 */
export function contentDisposition(fileName: string): string {
  const name = sanitizeFileName(fileName);
  const ascii = name
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .replace(/[^\x20-\x7e]|["\\%]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeExtValue(name)}`;
}

/** Entity tags in an If-None-Match or If-Range value, weak prefixes dropped; '*' stays '*'. */
function entityTags(header: string): string[] {
  const tags: string[] = [];
  const re = /\s*(\*|(?:W\/)?"[^"]*")\s*(?:,|$)/gy;
  let m: RegExpExecArray | null;
  while (re.lastIndex < header.length && (m = re.exec(header)) !== null) tags.push(m[1]!.replace(/^W\//, ''));
  return tags;
}

/** If-None-Match (weak comparison): does the client's copy match the current one? */
export function noneMatchHits(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return entityTags(header).some((t) => t === '*' || t === etag);
}

/** If-Range: the range applies only when the validator is this exact (strong) entity tag. */
export function ifRangeHolds(header: string | undefined, etag: string): boolean {
  if (!header) return true;
  return header.trim() === etag;
}

export type RangeRequest =
  { readonly kind: 'whole' } | { readonly kind: 'range'; readonly start: number; readonly end: number } | { readonly kind: 'unsatisfiable' };

/**
 * One `Range: bytes=a-b` (also `a-` and the suffix form `-n`) against a file of `size`
 * bytes. Several ranges, another unit or a malformed header get the whole file (a server
 * may ignore Range); a well-formed range that starts beyond the end is unsatisfiable (416).
 */
export function parseRange(header: string | undefined, size: number): RangeRequest {
  if (!header) return { kind: 'whole' };
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m) return { kind: 'whole' };
  const [, a = '', b = ''] = m;
  if (a === '' && b === '') return { kind: 'whole' };
  if (a === '') {
    const suffix = Number(b);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'range', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(a);
  const end = b === '' ? size - 1 : Number(b);
  if (!Number.isSafeInteger(start) || (b !== '' && (!Number.isSafeInteger(end) || end < start))) return { kind: 'whole' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'range', start, end: Math.min(end, size - 1) };
}
