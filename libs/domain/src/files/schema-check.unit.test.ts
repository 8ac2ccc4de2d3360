import { describe, expect, it } from 'vitest';
import { checkSchema, MAX_JSON_DEPTH } from './schema-check.ts';

/** Feeds the text in chunks of `size` bytes, so every state is crossed by a chunk boundary somewhere. */
async function check(text: string | Buffer, size = 3) {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8');
  async function* chunks() {
    for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
  }
  return checkSchema(chunks());
}

describe('CSV', () => {
  it.each([
    ['a,b,c\n1,2,3\n4,5,6\n', 2],
    ['a,b,c\r\n1,2,3\r\n4,5,6', 2],
    ['a,b\n"x, y","multi\nline"\n"say ""hi""",\n', 2],
    ['name\n\nx\n', 2],
    ['a,b\n', 0],
    ['\uFEFFa,b\n1,2\n', 1],
  ])('accepts %j', async (text, records) => {
    for (const size of [1, 2, 3, 7, 1024]) expect(await check(text, size)).toEqual({ ok: true, format: 'csv', records });
  });

  it.each([
    ['a,b,c\n1,2,3\n4,5\n7,8,9\n', 3, /expected 3 fields as in the header, found 2/],
    ['a,b\n1,2\n3,4,5\n', 3, /found 3/],
    ['a,b\n1,2\n\n3,4\n', 3, /empty line/],
    ['a,b\n"1\n2",3\n4\n', 4, /found 1/],
    ['a,b\n"open,2\n3,4\n', 2, /never closed/],
    ['a,b\n"x"y,2\n', 2, /after the closing quote/],
    ['a,b\nx"y,2\n', 2, /quote inside an unquoted field/],
    ['a,,c\n1,2,3\n', 1, /column 2 has no name/],
    ['a,b,a\n1,2,3\n', 1, /"a" twice/],
    ['\n\na,b\n', 1, /blank line/],
  ])('rejects %j at line %i', async (text, line, reason) => {
    for (const size of [1, 3, 1024]) {
      const verdict = await check(text, size);
      expect(verdict).toMatchObject({ ok: false, format: 'csv', line });
      expect(verdict.ok === false && verdict.reason).toMatch(reason);
    }
  });

  it('rejects bytes that are not UTF-8 with their line', async () => {
    expect(await check(Buffer.concat([Buffer.from('a,b\n1,2\n'), Buffer.from([0x66, 0xff, 0x2c, 0x31, 0x0a])]), 1024)).toMatchObject({
      ok: false,
      line: 3,
      reason: /UTF-8/,
    });
  });
});

describe('JSON and NDJSON', () => {
  it.each([
    ['{"a": [1, -2.5e+3, true, false, null, "x\\"\\u00e9\\n"], "b": {}}', 'json', 1],
    ['[\n  {"a": 1},\n  {"a": 2}\n]\n', 'json', 1],
    ['{"a":1}\n{"a":2}\n\n{"a":3}', 'ndjson', 3],
    ['{"a":1}\r\n{"a":2}\r\n', 'ndjson', 2],
    ['[]', 'json', 1],
    ['  \n {"x": 0}\n', 'json', 1],
  ])('accepts %j as %s', async (text, format, records) => {
    for (const size of [1, 2, 5, 1024]) expect(await check(text, size)).toEqual({ ok: true, format, records });
  });

  it.each([
    ['{"a":1}\n{"a":2\n{"a":3}\n', 2, /not complete on its line/],
    ['{"a":1 "b":2}', 1, /expected "," or "}"/],
    ['{"a": 01}', 1, /leading zeros/],
    ['{"a": tru}', 1, /literal/],
    ['{"a" 1}', 1, /":"/],
    ['[1, 2,]', 1, /expected a JSON value/],
    ['{"a": "x\ny"}', 1, /control character/],
    ['{"a":1} {"b":2}', 1, /same line/],
    ['{"a":\n1}\n{"b":2}\n', 1, /spans several lines/],
    ['{"a": [1, 2', 1, /ends in the middle/],
    ['[1.]', 1, /decimal point/],
    ['{"a":"\\x"}', 1, /invalid escape/],
    ['{"a":1}\n\n\n{"b":-}\n', 4, /digit must follow "-"/],
  ])('rejects %j at line %i', async (text, line, reason) => {
    for (const size of [1, 4, 1024]) {
      const verdict = await check(text, size);
      expect(verdict, `${text} in chunks of ${size}`).toMatchObject({ ok: false, line });
      expect(verdict.ok === false && verdict.reason).toMatch(reason);
    }
  });

  it('bounds the header it keeps: its length and its columns', async () => {
    const limits = { maxHeaderLength: 100, maxColumns: 8 };
    async function* chunks(text: string) {
      for (let i = 0; i < text.length; i += 7) yield Buffer.from(text.slice(i, i + 7));
    }
    expect(await checkSchema(chunks(`${'a'.repeat(101)}\n1\n`), limits)).toEqual({
      ok: false,
      format: 'csv',
      line: 1,
      reason: 'the header row is longer than 100 characters',
    });
    expect(await checkSchema(chunks(`"${'a\n'.repeat(60)}"\n1\n`), limits)).toEqual({
      ok: false,
      format: 'csv',
      line: 1,
      reason: 'the header row is longer than 100 characters',
    });
    expect(await checkSchema(chunks(`${'a,'.repeat(8)}b\n1\n`), limits)).toEqual({
      ok: false,
      format: 'csv',
      line: 1,
      reason: 'the header has more than 8 columns',
    });
    expect(await checkSchema(chunks(`${'a'.repeat(100)}\n1\n`), limits)).toEqual({ ok: true, format: 'csv', records: 1 });
    expect(await checkSchema(chunks('a,b,c,d,e,f,g,h\n1,2,3,4,5,6,7,8\n'), limits)).toEqual({ ok: true, format: 'csv', records: 1 });
  });

  it('a header of millions of commas fails at the default bounds, keeping nothing', async () => {
    expect(await check(','.repeat(5_000_000), 65_536)).toMatchObject({ ok: false, line: 1, reason: 'the header has more than 64 columns' });
    expect(await check('x'.repeat(5_000_000), 65_536)).toMatchObject({ ok: false, line: 1, reason: 'the header row is longer than 65536 characters' });
  });

  it('refuses nesting deeper than the limit instead of growing without bound', async () => {
    expect(await check('['.repeat(MAX_JSON_DEPTH + 1), 4096)).toMatchObject({ ok: false, reason: /nested deeper/ });
  });
});

describe('neither', () => {
  it('an empty or blank file has no schema', async () => {
    expect(await check('')).toMatchObject({ ok: false, line: 1, reason: /empty/ });
    expect(await check(' \n \n')).toMatchObject({ ok: false, reason: /empty/ });
  });
});
