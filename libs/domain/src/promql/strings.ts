import { badData } from './errors.ts';

const SIMPLE: Record<string, string> = { a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', "'": "'", '"': '"' };

/** A PromQL string literal's value: Go's quoting rules (escapes in "…" and '…', none in `…`). */
export function unquote(literal: string): string {
  const quote = literal[0];
  if (literal.length < 2 || literal[literal.length - 1] !== quote) throw badData(`unterminated string ${literal}`);
  const body = literal.slice(1, -1);
  if (quote === '`') return body;
  let out = '';
  for (let i = 0; i < body.length; i += 1) {
    const c = body[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = body[i + 1] ?? '';
    if (e in SIMPLE) {
      out += SIMPLE[e];
      i += 1;
    } else if (e === 'x' || e === 'u' || e === 'U') {
      const len = e === 'x' ? 2 : e === 'u' ? 4 : 8;
      const hex = body.slice(i + 2, i + 2 + len);
      if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== len) throw badData(`invalid escape in string ${literal}`);
      out += e === 'x' ? String.fromCharCode(parseInt(hex, 16)) : String.fromCodePoint(parseInt(hex, 16));
      i += 1 + len;
    } else if (/[0-7]/.test(e)) {
      const oct = body.slice(i + 1, i + 4);
      if (!/^[0-7]{3}$/.test(oct)) throw badData(`invalid escape in string ${literal}`);
      out += String.fromCharCode(parseInt(oct, 8));
      i += 3;
    } else {
      throw badData(`invalid escape \\${e} in string ${literal}`);
    }
  }
  return out;
}
