import { describe, expect, it } from 'vitest';
import { parseJsonUpload } from './json-upload-check.ts';
import { scanJsonUpload } from './json-upload-scan.ts';

const bytes = (text: string) => Buffer.from(text, 'utf8');
const MAX = 1_000_000;

/** What JSON.parse and the shape check make of the body, in the scan's terms (null: not an upload). */
function reference(body: Buffer): { metric_name: string; values: number } | { duplicate: string } | null {
  const check = parseJsonUpload(body, MAX);
  if (check.kind === 'invalid' && check.errors[0]?.reason === 'malformed JSON') return null;
  const keys = topLevelKeys(body.toString('utf8'));
  const duplicate = ['metric_name', 'values'].find((k) => keys.filter((key) => key === k).length > 1);
  if (duplicate) return { duplicate };
  return check.kind === 'ok' ? { metric_name: check.metric_name, values: check.values } : null;
}

/** The keys of a well-formed JSON object's top level, in order, repeats kept (JSON.parse keeps only the last). */
function topLevelKeys(text: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (depth === 1 && expectKey) keys.push(JSON.parse(text.slice(i, j + 1)) as string);
      expectKey = false;
      i = j;
    } else if (c === '{' || c === '[') {
      depth++;
      expectKey = c === '{';
    } else if (c === '}' || c === ']') {
      depth--;
    } else if (c === ',') {
      expectKey = depth === 1 && text.trimStart()[0] === '{';
    }
  }
  return keys;
}

/** A small seeded generator, so a failure names an input that can be replayed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SPACES = ['', ' ', '\n', '\t', '\r\n  '];
const NUMBERS = ['0', '-0', '12', '1.5', '-3.25e+2', '1E9', '0.0001', '6.02e23', '1e-7'];
const STRINGS = ['"2024-01-01T00:00:00Z"', '"x"', '""', '"a\\"b"', '"\\u00e9\\n\\t\\/"', '"é ✓ 𝄞"', '"\\ud834"'];

/** A JSON text of random shape: the generator of the property tests below. */
function jsonValue(r: () => number, depth: number): string {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const w = () => pick(SPACES);
  const kind = depth > 2 ? Math.floor(r() * 4) : Math.floor(r() * 6);
  if (kind === 0) return pick(NUMBERS);
  if (kind === 1) return pick(STRINGS);
  if (kind === 2) return pick(['true', 'false', 'null']);
  if (kind === 3) return `{${w()}"timestamp"${w()}:${w()}${pick(STRINGS)},${w()}"value":${pick(NUMBERS)}${w()}}`;
  if (kind === 4) return `[${Array.from({ length: Math.floor(r() * 4) }, () => w() + jsonValue(r, depth + 1) + w()).join(',')}]`;
  return `{${Array.from({ length: Math.floor(r() * 3) }, () => `${w()}${pick(STRINGS)}${w()}:${w()}${jsonValue(r, depth + 1)}`).join(',')}}`;
}

/** An upload-like body: the two members in either order, sometimes repeated, beside others. */
function uploadBody(r: () => number): string {
  const w = () => SPACES[Math.floor(r() * SPACES.length)]!;
  const members = [
    `"metric_name"${w()}:${w()}${STRINGS[Math.floor(r() * STRINGS.length)]!}`,
    `"values"${w()}:${w()}[${Array.from({ length: Math.floor(r() * 6) }, () => w() + jsonValue(r, 1) + w()).join(',')}]`,
  ];
  if (r() < 0.3) members.push(`"extra":${jsonValue(r, 1)}`);
  if (r() < 0.2) members.push(r() < 0.5 ? `"values":${jsonValue(r, 1)}` : `"metric_name":${jsonValue(r, 1)}`);
  if (r() < 0.5) members.reverse();
  return `${w()}{${w()}${members.join(`${w()},${w()}`)}${w()}}${w()}`;
}

const MUTATIONS = ['{', '}', '[', ']', '"', ',', ':', '\\', 'u', '0', '1', '-', '+', '.', 'e', 't', 'n', ' ', '\n', '\u0000', '\u001f', '\u00ff', '\\u12', 'x'];

function mutate(r: () => number, text: string): string {
  const at = Math.floor(r() * (text.length + 1));
  const ch = MUTATIONS[Math.floor(r() * MUTATIONS.length)]!;
  const op = Math.floor(r() * 3);
  if (op === 0) return text.slice(0, at) + ch + text.slice(at);
  if (op === 1) return text.slice(0, at) + text.slice(at + 1);
  return text.slice(0, at) + ch + text.slice(at + 1);
}

describe('scanJsonUpload', () => {
  it('finds the metric name and counts the values of a body without parsing it', () => {
    const body = JSON.stringify({
      metric_name: 'cpu.load "é"',
      values: [
        { timestamp: '2024-01-01T00:00:00Z', value: 1 },
        { timestamp: '2024-01-01T00:00:01Z', value: -2.5e3 },
      ],
    });
    expect(scanJsonUpload(bytes(body))).toEqual({ metric_name: 'cpu.load "é"', values: 2 });
    expect(scanJsonUpload(bytes(' {"values":[], "metric_name":"m"}\n'))).toEqual({ metric_name: 'm', values: 0 });
    expect(scanJsonUpload(bytes('{"values":[[1,[2]],{"a":[3]}],"metric_name":"m","other":{"values":[1,2,3]}}'))).toEqual({ metric_name: 'm', values: 2 });
  });

  it('leaves deep nesting to the bounded parse', () => {
    const deep = (n: number) => `{"metric_name":"m","values":[${'['.repeat(n)}${']'.repeat(n)}]}`;
    expect(scanJsonUpload(bytes(deep(60)))).toEqual({ metric_name: 'm', values: 1 });
    expect(scanJsonUpload(bytes(deep(100)))).toBeNull();
  });

  it('names a top-level key given twice, where JSON.parse would keep the last, escaped or not', () => {
    expect(scanJsonUpload(bytes('{"metric_name":"a","values":[1,2,3],"metric_name":"b","values":[4]}'))).toEqual({ duplicate: 'metric_name' });
    expect(scanJsonUpload(bytes('{"values":[1],"metric_name":"a","values":[4]}'))).toEqual({ duplicate: 'values' });
    expect(scanJsonUpload(bytes('{"metric_name":"a","values":[],"metric\\u005fname":"b"}'))).toEqual({ duplicate: 'metric_name' });
    // Keys repeated inside values are the task's to judge, as every value is.
    expect(scanJsonUpload(bytes('{"metric_name":"a","values":[{"value":1,"value":2}]}'))).toEqual({ metric_name: 'a', values: 1 });
  });

  it('decodes escaped top-level keys', () => {
    expect(scanJsonUpload(bytes('{"metric\\u005fname":"m","values":[1]}'))).toEqual({ metric_name: 'm', values: 1 });
  });

  it('vouches for nothing JSON.parse refuses, nor for a body of another shape', () => {
    for (const text of [
      '',
      '{}',
      '[]',
      '{"metric_name":"m"}',
      '{"values":[]}',
      '{"metric_name":1,"values":[]}',
      '{"metric_name":"m","values":{}}',
      '{"metric_name":"m","values":[]',
      '{"metric_name":"m","values":[],}',
      '{"metric_name":"m","values":[1,]}',
      '{"metric_name":"m","values":[01]}',
      '{"metric_name":"m","values":[1.]}',
      '{"metric_name":"m","values":[.5]}',
      '{"metric_name":"m","values":[+1]}',
      '{"metric_name":"m","values":[tru]}',
      '{"metric_name":"m\u0001","values":[]}',
      '{"metric_name":"\\x","values":[]}',
      '{"metric_name":"\\u12g4","values":[]}',
      '{"metric_name":"m","values":[]} x',
      '\ufeff{"metric_name":"m","values":[]}',
      '{"metric_name":"m"\u00a0,"values":[]}',
      '{"metric_name":"m","values":[]}{}',
    ]) {
      expect(scanJsonUpload(bytes(text)), text).toBeNull();
    }
  });

  it('agrees with JSON.parse on thousands of generated bodies and their mutations', () => {
    const r = random(15);
    let vouched = 0;
    for (let n = 0; n < 4000; n++) {
      let text = uploadBody(r);
      const mutations = n % 4;
      for (let m = 0; m < mutations; m++) text = mutate(r, text);
      const body = bytes(text);
      const scanned = scanJsonUpload(body);
      // The same answer as JSON.parse and the shape check: what it refuses is never vouched for,
      // and every upload it accepts is (no top-level key here is written with escapes).
      expect(scanned, text).toEqual(reference(body));
      if (scanned !== null) vouched++;
    }
    expect(vouched).toBeGreaterThan(1000);
  });
});
