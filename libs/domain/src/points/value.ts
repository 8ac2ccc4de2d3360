/**
 * Point values: 64-bit floats. CSV cells are text and parsed strictly; JSON values must
 * already be JSON numbers. A value that cannot be stored as written is an error, never
 * silently changed: overflow (1e999) is rejected, and so is underflow (1e-999 would become 0).
 */

export type ValueResult = { ok: true; value: number } | { ok: false; reason: string };

/** Optional sign, digits with an optional point (or a point and digits), optional exponent. */
const DECIMAL = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;
const NONZERO_DIGIT = /[1-9]/;

const FORMAT_REASON = 'must be a decimal number such as -1.5, 3, .5 or 1e-3';
const OVERFLOW_REASON = 'is out of the range of a 64-bit float';
const UNDERFLOW_REASON = 'is too small for a 64-bit float (it would be stored as 0)';

/** A space or a tab: what trimBlanks removes around a CSV cell. */
export const isBlankCode = (c: number): boolean => c === 32 || c === 9;

/** `text` without leading and trailing spaces and tabs; the same string when there are none. */
export function trimBlanks(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isBlankCode(text.charCodeAt(start))) start++;
  while (end > start && isBlankCode(text.charCodeAt(end - 1))) end--;
  return start === 0 && end === text.length ? text : text.slice(start, end);
}

/**
 * True when a number literal has a non-zero digit before its exponent: if such a literal
 * parses to 0 it underflowed. Only meaningful for literals that parsed to exactly 0.
 */
export function literalIsNonZero(literal: string): boolean {
  let end = literal.indexOf('e');
  if (end < 0) end = literal.indexOf('E');
  return NONZERO_DIGIT.test(end < 0 ? literal : literal.slice(0, end));
}

/** Exact powers of ten: for an integer mantissa below 2^53, m / 10^k (k <= 22) is correctly rounded. */
const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/**
 * The value of a plain decimal (sign, at most 15 digits, optional point, no exponent) or NaN
 * for anything else. The common case without a regular expression or Number(): with at most
 * 15 digits the mantissa is exact and one division by an exact power of ten rounds exactly
 * as Number() does (Clinger's fast path).
 */
function simpleDecimal(t: string, start: number, len: number): number {
  let i = start;
  let negative = false;
  const first = t.charCodeAt(start);
  if (first === 45 || first === 43) {
    negative = first === 45;
    i++;
  }
  let mantissa = 0;
  let digits = 0;
  let scale = -1; // digits after the point, -1 before it
  for (; i < len; i++) {
    const c = t.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      mantissa = mantissa * 10 + (c - 48);
      digits++;
      if (scale >= 0) scale++;
    } else if (c === 46 && scale < 0) {
      scale = 0;
    } else {
      return Number.NaN;
    }
  }
  if (digits === 0 || digits > 15) return Number.NaN;
  const value = scale > 0 ? mantissa / POW10[scale]! : mantissa;
  return negative ? -value : value;
}

/**
 * The value of the plain decimal in text[start, end) (surrounding spaces and tabs ignored), or
 * NaN when the cell is anything else: then parseValueText on the cell's text decides. The
 * common case of the CSV hot path, without a string or a result object per cell.
 */
export function plainDecimalAt(text: string, start: number, end: number): number {
  while (start < end && isBlankCode(text.charCodeAt(start))) start++;
  while (end > start && isBlankCode(text.charCodeAt(end - 1))) end--;
  return simpleDecimal(text, start, end);
}

/** Parses a CSV value cell: decimal or scientific notation, surrounding spaces and tabs ignored. */
export function parseValueText(text: string): ValueResult {
  const t = trimBlanks(text);
  const simple = simpleDecimal(t, 0, t.length);
  if (simple === simple) return { ok: true, value: simple }; // not NaN
  if (t.length === 0) return { ok: false, reason: 'must not be empty' };
  if (!DECIMAL.test(t)) return { ok: false, reason: FORMAT_REASON };
  const value = Number(t);
  if (!Number.isFinite(value)) return { ok: false, reason: OVERFLOW_REASON };
  if (value === 0 && literalIsNonZero(t)) return { ok: false, reason: UNDERFLOW_REASON };
  return { ok: true, value };
}

/** "a string", "null", "an array"... for messages about a value of the wrong JSON type. */
export function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}

/** Why a JSON value is not a point value (a finite number), or null when it is. */
export function valueProblem(v: unknown): string | null {
  if (typeof v !== 'number') return `must be a number, not ${kindOf(v)}`;
  if (!Number.isFinite(v)) return Number.isNaN(v) ? 'must be a finite number, not NaN' : OVERFLOW_REASON;
  return null;
}

/** The reason given for a JSON number literal that underflowed to 0 (see literalIsNonZero). */
export const VALUE_UNDERFLOW_REASON = UNDERFLOW_REASON;
