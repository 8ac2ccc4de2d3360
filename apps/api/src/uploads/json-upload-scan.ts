/**
 * A JSON upload body's metric name and number of values, found by one pass over the bytes
 * that allocates nothing per value: JSON.parse of a 10k-point body builds 20,000 objects and
 * strings that the check only counts, and parsing plus collecting them was most of the api's
 * CPU per upload. The pass accepts only what JSON.parse accepts (RFC 8259: the grammar,
 * string escapes, no control characters in strings, JSON whitespace only); it answers null
 * whenever it cannot vouch for the body, and checkJsonUpload then parses it to say what is
 * wrong, with JSON.parse's own message: null is never an error by itself.
 *
 * A top-level `metric_name` or `values` given twice is answered as such (`duplicate`), where
 * JSON.parse would silently keep the last: a body that says two things is refused, not guessed.
 * Top-level keys written with escapes (`"metric\u005fname"`) are decoded to be recognised.
 */
export type ScannedUpload = { readonly metric_name: string; readonly values: number };
export type DuplicateKey = { readonly duplicate: 'metric_name' | 'values' };

const OPEN_OBJECT = 0x7b; // {
const CLOSE_OBJECT = 0x7d; // }
const OPEN_ARRAY = 0x5b; // [
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

/** The top-level key the next value belongs to. */
const OTHER_KEY = 0;
const METRIC_NAME_KEY = 1;
const VALUES_KEY = 2;

/** Deeper nesting than an upload needs (3) is left to checkJsonUpload's bounded parse: the scan's own memory stays this small. */
const MAX_DEPTH = 64;

const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const NULL = Buffer.from('null');
const METRIC_NAME = Buffer.from('metric_name');
const VALUES = Buffer.from('values');
/** The characters a backslash may escape in a JSON string, besides `u`. */
const SIMPLE_ESCAPES = new Set([QUOTE, BACKSLASH, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]); // " \ / b f n r t

// Stays one function: one pass of a byte-level state machine whose state (open containers, the name and
// values found, the key) the loop updates at every value; split, that state would go in and out of every call
// on the hot path.
export function scanJsonUpload(b: Uint8Array): ScannedUpload | DuplicateKey | null {
  const open: number[] = []; // the containers open around the current position, outermost first
  let i = skipSpace(b, 0);
  if (b[i] !== OPEN_OBJECT) return null;
  let nameStart = -1;
  let nameEnd = -1;
  let values = -1;
  let valuesDepth = -1; // the depth of the elements of the "values" array being counted; -1 when outside it
  let key = OTHER_KEY;
  let seen = 0; // the top-level keys met so far, as METRIC_NAME_KEY and VALUES_KEY bits
  let duplicate: DuplicateKey | null = null;
  for (;;) {
    // A value starts here.
    i = skipSpace(b, i);
    if (open.length === valuesDepth) values++;
    const c = b[i];
    let owner = open.length === 1 ? key : OTHER_KEY;
    // A name that is no string, or values that are no array, count as missing: a later one may still replace them.
    if (owner === METRIC_NAME_KEY && c !== QUOTE) {
      nameStart = -1;
      owner = OTHER_KEY;
    } else if (owner === VALUES_KEY && c !== OPEN_ARRAY) {
      values = -1;
      owner = OTHER_KEY;
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (owner === VALUES_KEY) {
        values = 0;
        valuesDepth = open.length + 1;
      }
      if (open.length === MAX_DEPTH) return null;
      open.push(c);
      i = skipSpace(b, i + 1);
      if (b[i] !== (c === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        if (c === OPEN_ARRAY) continue; // its first element
        i = memberName(b, i, open.length);
        if (i < 0) return null;
        continue;
      }
      // An empty container: it ends here.
    } else if (c === QUOTE) {
      const end = stringEnd(b, i);
      if (end < 0) return null;
      if (owner === METRIC_NAME_KEY) {
        nameStart = i;
        nameEnd = end;
      }
      i = end;
    } else {
      i = c === 0x74 ? literalEnd(b, i, TRUE) : c === 0x66 ? literalEnd(b, i, FALSE) : c === 0x6e ? literalEnd(b, i, NULL) : numberEnd(b, i);
      if (i < 0) return null;
    }
    // After a value: containers that close, then a comma before the next value, or the end.
    for (;;) {
      i = skipSpace(b, i);
      const depth = open.length;
      if (depth === 0) {
        if (i !== b.length) return null;
        if (duplicate) return duplicate;
        if (nameStart < 0 || values < 0) return null;
        return { metric_name: JSON.parse(Buffer.from(b.buffer, b.byteOffset + nameStart, nameEnd - nameStart).toString('utf8')) as string, values };
      }
      const inObject = open[depth - 1] === OPEN_OBJECT;
      if (b[i] === (inObject ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        if (depth === valuesDepth) valuesDepth = -1;
        open.pop();
        i++;
        continue;
      }
      if (b[i] !== COMMA) return null;
      i++;
      break;
    }
    if (open[open.length - 1] === OPEN_OBJECT) {
      i = memberName(b, i, open.length);
      if (i < 0) return null;
    }
  }

  /** Reads `"name" :` of an object member; at the top level, notes which key it is. Returns the position after the colon, or -1. */
  function memberName(bytes: Uint8Array, at: number, depth: number): number {
    const start = skipSpace(bytes, at);
    if (bytes[start] !== QUOTE) return -1;
    const end = stringEnd(bytes, start);
    if (end < 0) return -1;
    if (depth === 1) {
      const raw = bytes.subarray(start + 1, end - 1);
      // Escaped names are rare: decoded (allocating) only then.
      const name = raw.includes(BACKSLASH) ? Buffer.from(JSON.parse(Buffer.from(bytes.subarray(start, end)).toString('utf8')) as string) : raw;
      key = equal(name, METRIC_NAME) ? METRIC_NAME_KEY : equal(name, VALUES) ? VALUES_KEY : OTHER_KEY;
      if (key !== OTHER_KEY && (seen & key) !== 0) duplicate ??= { duplicate: key === METRIC_NAME_KEY ? 'metric_name' : 'values' };
      seen |= key;
    }
    const colon = skipSpace(bytes, end);
    return bytes[colon] === COLON ? colon + 1 : -1;
  }
}

function skipSpace(b: Uint8Array, i: number): number {
  for (let c = b[i]; c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = b[++i]);
  return i;
}

/** The position after the string that starts (with its quote) at i, or -1 when it is not a JSON string. */
function stringEnd(b: Uint8Array, i: number): number {
  for (let j = i + 1; j < b.length;) {
    const c = b[j]!;
    if (c === QUOTE) return j + 1;
    if (c < 0x20) return -1;
    if (c !== BACKSLASH) {
      j++;
      continue;
    }
    const e = b[j + 1];
    if (e === 0x75) {
      // \uXXXX
      for (let k = j + 2; k < j + 6; k++) if (!isHex(b[k])) return -1;
      j += 6;
    } else if (e !== undefined && SIMPLE_ESCAPES.has(e)) {
      j += 2;
    } else {
      return -1;
    }
  }
  return -1;
}

function isHex(c: number | undefined): boolean {
  return c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= ZERO && c <= NINE;
}

/** `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`: the position after it, or -1. */
function numberEnd(b: Uint8Array, i: number): number {
  let j = i;
  if (b[j] === MINUS) j++;
  if (!isDigit(b[j])) return -1;
  if (b[j] === ZERO) j++;
  else while (isDigit(b[j])) j++;
  if (b[j] === DOT) {
    j++;
    if (!isDigit(b[j])) return -1;
    while (isDigit(b[j])) j++;
  }
  if (b[j] === 0x65 || b[j] === 0x45) {
    // e E
    j++;
    if (b[j] === PLUS || b[j] === MINUS) j++;
    if (!isDigit(b[j])) return -1;
    while (isDigit(b[j])) j++;
  }
  return j;
}

function literalEnd(b: Uint8Array, i: number, word: Uint8Array): number {
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word[k]) return -1;
  return i + word.length;
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return false;
  return true;
}
