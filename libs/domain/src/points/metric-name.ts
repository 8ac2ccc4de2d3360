/**
 * Metric names. Anything printable is allowed (colons, commas, quotes, backslashes, %, _,
 * inner spaces, any script) except what breaks a downstream use:
 *   - control characters (C0, DEL and C1) break CSV rows, logs and terminals;
 *   - a leading =, +, - or @, which spreadsheets run as a formula (CSV injection);
 *   - unpaired UTF-16 surrogates, which have no UTF-8 encoding (they would be stored as U+FFFD).
 */

export const MAX_METRIC_NAME_LENGTH = 256;

const FORMULA_STARTS = '=+-@';

const hex4 = (code: number): string => code.toString(16).toUpperCase().padStart(4, '0');

/**
 * Why `name` is not a valid metric name, or null when it is. Length counts code points.
 * A name with a comma is valid (the upload issue allows any punctuation); the download `list`
 * pattern splits on commas, so such a name is asked for with `single` or a substring pattern.
 */
export function metricNameProblem(name: string): string | null {
  if (typeof name !== 'string') return 'must be a string';
  if (name.length === 0) return 'must not be empty';
  const first = name.charAt(0);
  if (FORMULA_STARTS.includes(first)) return `must not start with "${first}" (spreadsheet formula injection)`;
  let count = 0;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    count++;
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
      return `must not contain control characters (U+${hex4(c)} at character ${count})`;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = name.charCodeAt(i + 1);
      if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) {
        return `must be valid Unicode (unpaired surrogate U+${hex4(c)} at character ${count})`;
      }
      i++; // a surrogate pair is one character
    }
  }
  if (count > MAX_METRIC_NAME_LENGTH) return `must be at most ${MAX_METRIC_NAME_LENGTH} characters (has ${count})`;
  return null;
}
