import { describe, expect, it, vi } from 'vitest';
import { MAX_JSON_NESTING, parseUploadBatches, type ParseUploadOptions, type UploadItem, type UploadLayout } from './parse.ts';
import { formatTimestamp } from '../points/timestamp.ts';

const enc = new TextEncoder();

async function* source(parts: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield part;
}

async function collect(input: string | Uint8Array | readonly Uint8Array[], options: ParseUploadOptions = {}): Promise<UploadItem[]> {
  const parts = typeof input === 'string' ? [enc.encode(input)] : input instanceof Uint8Array ? [input] : input;
  const items: UploadItem[] = [];
  for await (const batch of parseUploadBatches(source(parts), options)) items.push(...batch);
  return items;
}

const layout = (l: UploadLayout): UploadItem => ({ kind: 'layout', layout: l });
const point = (row: number, metric_name: string, ts: number, value: number): UploadItem => ({ kind: 'point', row, metric_name, ts, value });
const error = (row: number, column: string, reason: string): UploadItem => ({ kind: 'error', row, column, reason });
const jsonError = (text: string): string => {
  try {
    JSON.parse(text);
  } catch (e) {
    return `invalid JSON: ${(e as Error).message}`;
  }
  throw new Error(`${text} is valid JSON`);
};

const T0 = Date.UTC(2024, 0, 1); // 2024-01-01T00:00:00Z
const S = 1000;
const TS_FORMAT = 'expected YYYY-MM-DDTHH:MM:SS with an optional .fraction and an offset Z, +hhmm, -hhmm, +hh:mm or -hh:mm';
const OFFSET_REQUIRED = 'an offset is required (Z, +hhmm, -hhmm, +hh:mm or -hh:mm); the time zone is never guessed';
const VALUE_FORMAT = 'must be a decimal number such as -1.5, 3, .5 or 1e-3';
const M = { metricName: 'cpu' };

describe('parseUploadBatches: CSV layouts', () => {
  it('csv-with-header: header is line 1, rows are numbered by line', async () => {
    expect(await collect('timestamp,value\n2024-01-01T00:00:00+0000,1.5\n2024-01-01T00:00:01Z,-2\n', M)).toEqual([
      layout('csv-with-header'),
      point(2, 'cpu', T0, 1.5),
      point(3, 'cpu', T0 + S, -2),
    ]);
  });

  it.each(['TIMESTAMP,Value', ' timestamp , value ', '"timestamp","value"', 'timestamp,value\r'])('recognises the header %j', async (header) => {
    expect(await collect(`${header}\n2024-01-01T00:00:00Z,1\n`, M)).toEqual([layout('csv-with-header'), point(2, 'cpu', T0, 1)]);
  });

  it('csv without header: the first line is data', async () => {
    expect(await collect('2024-01-01T00:00:00+0000,1.5\n2024-01-01T00:00:01+0000,2', M)).toEqual([
      layout('csv'),
      point(1, 'cpu', T0, 1.5),
      point(2, 'cpu', T0 + S, 2),
    ]);
  });

  it('csv: a first line that is neither header nor data is a data error', async () => {
    expect(await collect('time,value\n2024-01-01T00:00:00Z,1\n', M)).toEqual([
      layout('csv'),
      error(1, 'timestamp', `${TS_FORMAT}; got "time"`),
      error(1, 'value', `${VALUE_FORMAT}; got "value"`),
      point(2, 'cpu', T0, 1),
    ]);
  });

  it('trims spaces around timestamp and value cells', async () => {
    expect(await collect(' 2024-01-01T00:00:00Z , 1.5 \n', M)).toEqual([layout('csv'), point(1, 'cpu', T0, 1.5)]);
  });

  it('download-csv: each row has its own metric name; updated_at is validated, not returned', async () => {
    const text = [
      'metric_name,timestamp,metric_numeric_value,updated_at',
      'cpu.load,2024-01-01T00:00:00+0000,0.5,2024-02-01T00:00:00+0000',
      '"mem ""free""",2024-01-01T00:00:01.250+0000,1e3,2024-02-01T00:00:00+0000',
      'cpu.load,2024-01-01T00:00:02+0000,1,2024-02-01T00:00:00',
      'cpu.load,2024-01-01T00:00:03+0000,1,',
      ',2024-01-01T00:00:04+0000,1,2024-02-01T00:00:00+0000',
      '=cmd,2024-01-01T00:00:05,x,2024-02-30T00:00:00+0000',
      'cpu.load,2024-01-01T00:00:06+0000,1',
      '',
    ].join('\n');
    expect(await collect(text)).toEqual([
      layout('download-csv'),
      point(2, 'cpu.load', T0, 0.5),
      point(3, 'mem "free"', T0 + S + 250, 1000),
      error(4, 'updated_at', `${OFFSET_REQUIRED}; got "2024-02-01T00:00:00"`),
      error(5, 'updated_at', 'must not be empty'),
      error(6, 'metric_name', 'must not be empty'),
      error(7, 'metric_name', 'must not start with "=" (spreadsheet formula injection); got "=cmd"'),
      error(7, 'timestamp', `${OFFSET_REQUIRED}; got "2024-01-01T00:00:05"`),
      error(7, 'value', `${VALUE_FORMAT}; got "x"`),
      error(7, 'updated_at', 'day 30 does not exist in 2024-02; got "2024-02-30T00:00:00+0000"'),
      error(8, 'row', 'expected 4 columns (metric_name,timestamp,metric_numeric_value,updated_at), got 3'),
    ]);
  });

  it('download-csv: with an upload metric name, rows of another metric are errors', async () => {
    const text =
      'metric_name,timestamp,metric_numeric_value,updated_at\ncpu,2024-01-01T00:00:00Z,1,2024-01-01T00:00:00Z\nmem,2024-01-01T00:00:00Z,2,2024-01-01T00:00:00Z\n';
    expect(await collect(text, M)).toEqual([
      layout('download-csv'),
      point(2, 'cpu', T0, 1),
      error(3, 'metric_name', 'differs from the upload\'s metric_name "cpu"; got "mem"'),
    ]);
  });

  it('download-csv round trip: the exact download format parses back to the same points', async () => {
    const points = [
      { metric_name: 'cpu.load', ts: T0, value: 0.5 },
      { metric_name: 'cpu.load', ts: T0 + 1, value: -1.25e-7 },
      { metric_name: 'température 😀', ts: 0, value: 0 },
      { metric_name: 'say "hi"', ts: 4_291_747_199_999, value: 1.7976931348623157e308 },
      { metric_name: 'a:b\\c%_', ts: T0 + 120, value: 123_456_789.123 },
      { metric_name: 'cpu.load', ts: T0 + 3 * S, value: 42 },
    ];
    const cell = (s: string) => (/[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s);
    const updatedAt = formatTimestamp(T0 + 86_400_000);
    const lines = points.map((p) => `${cell(p.metric_name)},${formatTimestamp(p.ts)},${p.value},${updatedAt}`);
    expect(lines[0]).toBe('cpu.load,2024-01-01T00:00:00+0000,0.5,2024-01-02T00:00:00+0000');
    expect(lines[3]).toBe('"say ""hi""",2105-12-31T23:59:59.999+0000,1.7976931348623157e+308,2024-01-02T00:00:00+0000');
    const text = `metric_name,timestamp,metric_numeric_value,updated_at\n${lines.join('\n')}\n`;
    expect(await collect(text)).toEqual([layout('download-csv'), ...points.map((p, i) => point(i + 2, p.metric_name, p.ts, p.value))]);
  });

  it('counts blank lines, CRLF and quoted multi-line fields in row numbers', async () => {
    const text = [
      'timestamp,value\r\n', // 1
      '\r\n', // 2 blank
      '2024-01-01T00:00:00Z,1\r\n', // 3
      '  \t \n', // 4 blank (spaces only)
      '"2024-01-01T00:00:01Z","2\n\n"\n', // 5-7: one record starting on line 5
      '2024-01-01T00:00:02Z,3\n', // 8
      '"2024-01-01T00:00:03Z","4"\r\n', // 9
      '\n', // 10 blank
      '"2024-01-01T00:00:04Z",5', // 11, no final newline
    ].join('');
    expect(await collect(text, M)).toEqual([
      layout('csv-with-header'),
      point(3, 'cpu', T0, 1),
      error(5, 'value', `${VALUE_FORMAT}; got "2\\n\\n"`),
      point(8, 'cpu', T0 + 2 * S, 3),
      point(9, 'cpu', T0 + 3 * S, 4),
      point(11, 'cpu', T0 + 4 * S, 5),
    ]);
  });

  it('reports a wrong column count as a row error', async () => {
    expect(await collect('2024-01-01T00:00:00Z,1,2\n2024-01-01T00:00:00Z\n2024-01-01T00:00:00Z,\n,,,,,,,\n', M)).toEqual([
      layout('csv'),
      error(1, 'row', 'expected 2 columns (timestamp,value), got 3'),
      error(2, 'row', 'expected 2 columns (timestamp,value), got 1'),
      error(3, 'value', 'must not be empty'),
      error(4, 'row', 'expected 2 columns (timestamp,value), got 8'),
    ]);
  });

  it('reports malformed quoting as row errors and carries on', async () => {
    const text = [
      '2024-01-01T00:00:00Z,1"5', // 1: bare quote
      '"2024-01-01T00:00:01Z"x,1', // 2: text after the closing quote
      '"2024-01-01T00:00:02Z" ,1', // 3: even a space
      '"2024-01-01T00:00:03Z",1', // 4: fine
      '"2024-01-01T00:00:04Z,5', // 5: never closed: swallows the rest
      '2024-01-01T00:00:05Z,6',
      '',
    ].join('\n');
    expect(await collect(text, M)).toEqual([
      layout('csv'),
      error(1, 'row', 'a double quote inside an unquoted field (quote the whole field and double the quote)'),
      error(2, 'row', 'unexpected characters after a closing quote'),
      error(3, 'row', 'unexpected characters after a closing quote'),
      point(4, 'cpu', T0 + 3 * S, 1),
      error(5, 'row', 'unterminated quoted field'),
    ]);
  });

  it('unescapes doubled quotes in quoted fields', async () => {
    const text = 'metric_name,timestamp,metric_numeric_value,updated_at\n"a ""quoted"" name","2024-01-01T00:00:00Z","1","2024-01-01T00:00:00Z"\n';
    expect(await collect(text)).toEqual([layout('download-csv'), point(2, 'a "quoted" name', T0, 1)]);
  });

  it('bounds memory: an over-long line is a row error, quoted or not, and the next row still parses', async () => {
    const long = 'x'.repeat(70_000);
    const text = `"${long}",1\n2024-01-01T00:00:00Z,2\n${long},3\n2024-01-01T00:00:01Z,4\n`;
    expect(await collect(text, M)).toEqual([
      layout('csv'),
      error(1, 'row', 'the line is longer than 65536 characters'),
      point(2, 'cpu', T0, 2),
      error(3, 'row', 'the line is longer than 65536 characters'),
      point(4, 'cpu', T0 + S, 4),
    ]);
  });

  it('requires the upload metric name for layouts without one, and stops', async () => {
    expect(await collect('timestamp,value\n2024-01-01T00:00:00Z,1\nbad,row\n')).toEqual([
      layout('csv-with-header'),
      error(0, 'metric_name', 'required: the csv-with-header layout carries no metric name, so the upload must give metric_name'),
    ]);
    expect(await collect('2024-01-01T00:00:00Z,1\n')).toEqual([
      layout('csv'),
      error(0, 'metric_name', 'required: the csv layout carries no metric name, so the upload must give metric_name'),
    ]);
  });

  it('a header alone gives no points and no error (the caller decides about empty uploads)', async () => {
    expect(await collect('timestamp,value\n', M)).toEqual([layout('csv-with-header')]);
  });
});

describe('parseUploadBatches: JSON layouts', () => {
  it('json-array: rows are 1-based indexes', async () => {
    const text = '[{"timestamp":"2024-01-01T00:00:00+0000","value":1.5},{"value":2,"timestamp":"2024-01-01T00:00:01Z"}]';
    expect(await collect(text, M)).toEqual([layout('json-array'), point(1, 'cpu', T0, 1.5), point(2, 'cpu', T0 + S, 2)]);
  });

  it('json-array: every problem of every element is reported', async () => {
    const text = JSON.stringify([
      { timestamp: '2024-01-01T00:00:00Z', value: '1' },
      { timestamp: 1_704_067_200, value: null },
      { value: 3 },
      { timestamp: '2024-01-01T00:00:00Z' },
      { timestamp: '2024-01-01T00:00:00Z', value: 5, metric_name: 'mem' },
      7,
      null,
      { timestamp: '', value: true },
      { timestamp: '2024-01-01T00:00:00Z', value: 9 },
    ]);
    expect(await collect(text, M)).toEqual([
      layout('json-array'),
      error(1, 'value', 'must be a number, not a string'),
      error(2, 'timestamp', 'must be a string, not a number'),
      error(2, 'value', 'must be a number, not null'),
      error(3, 'timestamp', 'required'),
      error(4, 'value', 'required'),
      error(5, 'row', 'unknown field "metric_name" (allowed: timestamp, value)'),
      error(6, 'row', 'must be an object with timestamp, value, not a number'),
      error(7, 'row', 'must be an object with timestamp, value, not null'),
      error(8, 'timestamp', 'must not be empty'),
      error(8, 'value', 'must be a number, not a boolean'),
      point(9, 'cpu', T0, 9),
    ]);
  });

  it('json-array: overflow and underflow literals are errors, zero is a value', async () => {
    const text =
      '[{"timestamp":"2024-01-01T00:00:00Z","value":1e999},{"timestamp":"2024-01-01T00:00:00Z","value":1e-400},{"timestamp":"2024-01-01T00:00:00Z","value":0},{"timestamp":"2024-01-01T00:00:00Z","value":-0.0e5}]';
    expect(await collect(text, M)).toEqual([
      layout('json-array'),
      error(1, 'value', 'is out of the range of a 64-bit float'),
      error(2, 'value', 'is too small for a 64-bit float (it would be stored as 0)'),
      point(3, 'cpu', T0, 0),
      point(4, 'cpu', T0, -0),
    ]);
  });

  it('finds an underflow however it is written, beside real zeros', async () => {
    const ts = '"timestamp":"2024-01-01T00:00:00Z"';
    const tiny = [`0.${'0'.repeat(400)}1`, '5E-400', `0.${'0'.repeat(200)}1e-200`, '-2.5e-330'];
    const text = `[${[...tiny, '0', '0e-5', '1e-300'].map((v) => `{${ts},"value":${v}}`).join(',')}]`;
    const underflow = 'is too small for a 64-bit float (it would be stored as 0)';
    expect(await collect(text, M)).toEqual([
      layout('json-array'),
      ...tiny.map((_, i) => error(i + 1, 'value', underflow)),
      point(5, 'cpu', T0, 0),
      point(6, 'cpu', T0, 0),
      point(7, 'cpu', T0, 1e-300),
    ]);
    expect(await collect(`{${ts},"value":1e-400}\n{${ts},"value":0}\n`, M)).toEqual([layout('ndjson'), error(1, 'value', underflow), point(2, 'cpu', T0, 0)]);
  });

  it('json-array needs the upload metric name', async () => {
    expect(await collect('[]')).toEqual([
      layout('json-array'),
      error(0, 'metric_name', 'required: the json-array layout carries no metric name, so the upload must give metric_name'),
    ]);
  });

  it('invalid JSON is one error for the whole document, with the parser message', async () => {
    const text = '[{"timestamp":"2024-01-01T00:00:00Z","value":1},]';
    expect(await collect(text, M)).toEqual([layout('json-array'), error(0, 'row', jsonError(text))]);
    const body = '{\n  "metric_name": "cpu",\n  "values": [\n';
    expect(await collect(body)).toEqual([layout('json-body'), error(0, 'row', jsonError(body))]);
  });

  it('json-body: the body metric name is used', async () => {
    const text =
      '{\n  "metric_name": "cpu",\n  "values": [\n    {"timestamp": "2024-01-01T00:00:00.5+01:00", "value": 2},\n    {"timestamp": "2024-01-01T00:00:00", "value": 3}\n  ]\n}\n';
    expect(await collect(text)).toEqual([
      layout('json-body'),
      point(1, 'cpu', T0 - 3600 * S + 500, 2),
      error(2, 'timestamp', `${OFFSET_REQUIRED}; got "2024-01-01T00:00:00"`),
    ]);
    expect(await collect(text, { metricName: 'cpu' })).toEqual([
      layout('json-body'),
      point(1, 'cpu', T0 - 3600 * S + 500, 2),
      error(2, 'timestamp', `${OFFSET_REQUIRED}; got "2024-01-01T00:00:00"`),
    ]);
  });

  it('json-body: a body metric name different from the upload one is an error', async () => {
    const text = '{"metric_name":"mem","values":[{"timestamp":"2024-01-01T00:00:00Z","value":1}]}';
    expect(await collect(text, M)).toEqual([layout('json-body'), error(0, 'metric_name', 'differs from the upload\'s metric_name "cpu"; got "mem"')]);
  });

  it('json-body: without a body metric name the upload one is used, and one is required', async () => {
    const text = '{"values":[{"timestamp":"2024-01-01T00:00:00Z","value":1}]}';
    expect(await collect(text, M)).toEqual([layout('json-body'), point(1, 'cpu', T0, 1)]);
    expect(await collect(text)).toEqual([layout('json-body'), error(0, 'metric_name', 'required: give metric_name in the body or with the upload')]);
  });

  it('json-body: document-level problems', async () => {
    expect(await collect('{"metric_name":"=x","values":[]}')).toEqual([
      layout('json-body'),
      error(0, 'metric_name', 'must not start with "=" (spreadsheet formula injection); got "=x"'),
    ]);
    expect(await collect('{"metric_name":7,"values":[]}')).toEqual([layout('json-body'), error(0, 'metric_name', 'must be a string, not a number')]);
    expect(await collect('{"metric_name":"cpu"}')).toEqual([
      layout('json-body'),
      error(0, 'row', 'values is required: an array of {timestamp, value} objects'),
    ]);
    expect(await collect('{"metric_name":"cpu","values":{}}')).toEqual([
      layout('json-body'),
      error(0, 'row', 'values must be an array of {timestamp, value} objects, not an object'),
    ]);
    expect(await collect('{"metric_name":"cpu","valeus":[],"values":[]}')).toEqual([
      layout('json-body'),
      error(0, 'row', 'unknown field "valeus" (allowed: metric_name, values)'),
    ]);
  });

  it('json-body: a one-line body is a body, not NDJSON', async () => {
    const text = '{"metric_name":"cpu","values":[{"timestamp":"2024-01-01T00:00:00Z","value":1}]}\n';
    expect(await collect(text)).toEqual([layout('json-body'), point(1, 'cpu', T0, 1)]);
  });

  it('json-body: a body that is one line is parsed once, its layout told from the same parse', async () => {
    const text = '  {"metric_name":"cpu","values":[{"timestamp":"2024-01-01T00:00:00Z","value":1},{"timestamp":"x","value":2}]}';
    const parse = vi.spyOn(JSON, 'parse');
    try {
      expect(await collect(text)).toEqual([layout('json-body'), point(1, 'cpu', T0, 1), error(2, 'timestamp', `${TS_FORMAT}; got "x"`)]);
      expect(parse).toHaveBeenCalledTimes(1);
    } finally {
      parse.mockRestore();
    }
  });

  it('ndjson: one object per line, row = physical line, optional per-line metric name', async () => {
    const text = [
      '{"timestamp":"2024-01-01T00:00:00Z","value":1}', // 1
      '', // 2
      '{"timestamp":"2024-01-01T00:00:01Z","value":2,"metric_name":"mem"}\r', // 3
      '   ', // 4
      '{"timestamp":"2024-01-01T00:00:02Z","value":"3"}', // 5
      '{"timestamp":"2024-01-01T00:00:03Z","value":4', // 6
      '[1]', // 7
      '{"timestamp":"2024-01-01T00:00:04Z","value":0,"extra":1}', // 8
      '{"timestamp":"2024-01-01T00:00:05Z","value":1e-999}', // 9
      '{"timestamp":"2024-01-01T00:00:06Z","value":6}', // 10, no final newline
    ].join('\n');
    expect(await collect(text, M)).toEqual([
      layout('ndjson'),
      point(1, 'cpu', T0, 1),
      error(3, 'metric_name', 'differs from the upload\'s metric_name "cpu"; got "mem"'),
      error(5, 'value', 'must be a number, not a string'),
      error(6, 'row', jsonError('{"timestamp":"2024-01-01T00:00:03Z","value":4')),
      error(7, 'row', 'must be an object with timestamp, value, metric_name, not an array'),
      error(8, 'row', 'unknown field "extra" (allowed: timestamp, value, metric_name)'),
      error(9, 'value', 'is too small for a 64-bit float (it would be stored as 0)'),
      point(10, 'cpu', T0 + 6 * S, 6),
    ]);
  });

  it('ndjson: lines name their metric when the upload does not', async () => {
    const text =
      '{"metric_name":"cpu","timestamp":"2024-01-01T00:00:00Z","value":1}\n{"metric_name":"mem","timestamp":"2024-01-01T00:00:00Z","value":2}\n{"timestamp":"2024-01-01T00:00:00Z","value":3}\n{"metric_name":"a,b","timestamp":"2024-01-01T00:00:00Z","value":4}\n';
    expect(await collect(text)).toEqual([
      layout('ndjson'),
      point(1, 'cpu', T0, 1),
      point(2, 'mem', T0, 2),
      error(3, 'metric_name', 'required: this line has no metric_name and the upload gives none'),
      point(4, 'a,b', T0, 4),
    ]);
  });

  it('ndjson: a single line is NDJSON too', async () => {
    expect(await collect('{"timestamp":"2024-01-01T00:00:00Z","value":1}', M)).toEqual([layout('ndjson'), point(1, 'cpu', T0, 1)]);
  });

  it('ndjson: an over-long line is a row error', async () => {
    const text = `{"timestamp":"2024-01-01T00:00:00Z","value":1}\n{"timestamp":"2024-01-01T00:00:00Z","value":${'1'.repeat(70_000)}}\n{"timestamp":"2024-01-01T00:00:00Z","value":3}\n`;
    expect(await collect(text, M)).toEqual([
      layout('ndjson'),
      point(1, 'cpu', T0, 1),
      error(2, 'row', 'the line is longer than 65536 characters'),
      point(3, 'cpu', T0, 3),
    ]);
  });
});

describe('parseUploadBatches: detection and the whole upload', () => {
  it('skips a UTF-8 BOM and leading whitespace', async () => {
    expect(await collect('\uFEFF \r\n\t[{"timestamp":"2024-01-01T00:00:00Z","value":1}]', M)).toEqual([layout('json-array'), point(1, 'cpu', T0, 1)]);
    expect(await collect('\uFEFFtimestamp,value\n2024-01-01T00:00:00Z,1\n', M)).toEqual([layout('csv-with-header'), point(2, 'cpu', T0, 1)]);
    expect(await collect('\n\n{"timestamp":"2024-01-01T00:00:00Z","value":1}\n', M)).toEqual([layout('ndjson'), point(3, 'cpu', T0, 1)]);
    expect(await collect('\n\n2024-01-01T00:00:00Z,1\n', M)).toEqual([layout('csv'), point(3, 'cpu', T0, 1)]);
  });

  it.each(['', ' \n\r\n\t', '\uFEFF'])('an empty upload (%j) is one error', async (text) => {
    expect(await collect(text, M)).toEqual([error(0, 'row', 'the upload is empty')]);
  });

  it('an invalid upload metric name is one error, before anything is read', async () => {
    expect(await collect('2024-01-01T00:00:00Z,1\n', { metricName: 'a\nb' })).toEqual([
      error(0, 'metric_name', 'must not contain control characters (U+000A at character 2); got "a\\nb"'),
    ]);
  });

  it('stops reading the source once the rest cannot matter', async () => {
    let closed = false;
    let reads = 0;
    async function* endless(): AsyncGenerator<Uint8Array> {
      try {
        for (;;) {
          reads++;
          yield enc.encode('2024-01-01T00:00:00Z,1\n');
        }
      } finally {
        closed = true;
      }
    }
    const items: UploadItem[] = [];
    for await (const batch of parseUploadBatches(endless(), {})) items.push(...batch);
    expect(items).toEqual([layout('csv'), error(0, 'metric_name', 'required: the csv layout carries no metric name, so the upload must give metric_name')]);
    expect(closed).toBe(true);
    expect(reads).toBe(1);
  });

  it('invalid UTF-8 stops the upload with one error naming the line', async () => {
    const bytes = new Uint8Array([
      ...enc.encode('2024-01-01T00:00:00Z,1\n2024-01-01T00:00:01Z,2\n2024-01-01T00:00:02Z,'),
      0xff,
      ...enc.encode('\n2024-01-01T00:00:03Z,4\n'),
    ]);
    const expected = [
      layout('csv'),
      point(1, 'cpu', T0, 1),
      point(2, 'cpu', T0 + S, 2),
      error(0, 'row', 'invalid UTF-8: the upload must be UTF-8 encoded (line 3)'),
    ];
    expect(await collect(bytes, M)).toEqual(expected);
    for (let i = 1; i < bytes.length; i++) expect(await collect([bytes.subarray(0, i), bytes.subarray(i)], M)).toEqual(expected);
  });

  it('Latin-1 text is not silently decoded', async () => {
    const latin1 = new Uint8Array([
      ...enc.encode('metric_name,timestamp,metric_numeric_value,updated_at\ntemp'),
      0xe9,
      ...enc.encode('rature,2024-01-01T00:00:00Z,1,2024-01-01T00:00:00Z\n'),
    ]);
    expect(await collect(latin1)).toEqual([layout('download-csv'), error(0, 'row', 'invalid UTF-8: the upload must be UTF-8 encoded (line 2)')]);
  });

  it('an upload ending inside a multi-byte character is an error', async () => {
    const euro = enc.encode('€'); // E2 82 AC
    const bytes = new Uint8Array([...enc.encode('2024-01-01T00:00:00Z,1\n'), euro[0]!, euro[1]!]);
    expect(await collect(bytes, M)).toEqual([
      layout('csv'),
      point(1, 'cpu', T0, 1),
      error(0, 'row', 'invalid UTF-8: the upload ends inside a multi-byte character (line 2)'),
    ]);
  });

  it('invalid UTF-8 in a JSON document', async () => {
    const bytes = new Uint8Array([...enc.encode('[{"timestamp":"2024-01-01T00:00:00Z","value":1,"x":"'), 0xc0, 0x80, ...enc.encode('"}]')]);
    expect(await collect(bytes, M)).toEqual([layout('json-array'), error(0, 'row', 'invalid UTF-8: the upload must be UTF-8 encoded')]);
  });
});

describe('parseUploadBatches: chunk boundaries', () => {
  const cases: Array<[string, string, ParseUploadOptions]> = [
    [
      'csv with quotes, CRLF, blank lines and errors',
      'timestamp,value\r\n2024-01-01T00:00:00Z,1\r\n\r\n"2024-01-01T00:00:01Z","2\r\nx"\r\n"2024-01-01T00:00:02.5+01:00",""\n2024-01-01T00:00:03Z,"4"\n"bad"x,5\nno,"unterminated\n',
      M,
    ],
    [
      'download-csv with multi-byte names',
      'metric_name,timestamp,metric_numeric_value,updated_at\ntempérature 😀,2024-01-01T00:00:00+0000,1.5,2024-01-01T00:00:00+0000\n"指标 ""x""",2024-01-01T00:00:01+0000,-2,2024-01-01T00:00:00+0000\n\u00e9\u0301,2024-01-01T00:00:02,3,2024-01-01T00:00:00+0000',
      {},
    ],
    [
      'ndjson',
      '\uFEFF{"timestamp":"2024-01-01T00:00:00Z","value":1,"metric_name":"é😀"}\n\n{"timestamp":"2024-01-01T00:00:01Z","value":2,"metric_name":"指标"}\n{"oops"\n{"timestamp":"2024-01-01T00:00:02Z","value":0}\n',
      { metricName: 'é😀' },
    ],
    ['json-body', '{\n "metric_name": "é😀",\n "values": [{"timestamp": "2024-01-01T00:00:00Z", "value": 1}, {"timestamp": "x", "value": 2}]\n}', {}],
  ];

  it.each(cases)('%s: every split gives the same items', async (_name, text, options) => {
    const bytes = enc.encode(text);
    const whole = await collect(bytes, options);
    expect(whole.length).toBeGreaterThan(2);
    for (let i = 0; i <= bytes.length; i++) {
      expect(await collect([bytes.subarray(0, i), bytes.subarray(i)], options), `split at byte ${i}`).toEqual(whole);
    }
    const single = Array.from(bytes, (_b, i) => bytes.subarray(i, i + 1));
    expect(await collect(single, options), 'one byte per chunk').toEqual(whole);
    const threeWay = [bytes.subarray(0, 7), bytes.subarray(7, 8), bytes.subarray(8, 40), new Uint8Array(0), bytes.subarray(40)];
    expect(await collect(threeWay, options), 'uneven chunks').toEqual(whole);
  });

  it('the csv case parses to exactly these items', async () => {
    expect(await collect(cases[0]![1], M)).toEqual([
      layout('csv-with-header'),
      point(2, 'cpu', T0, 1),
      error(4, 'value', `${VALUE_FORMAT}; got "2\\r\\nx"`),
      error(6, 'value', 'must not be empty'),
      point(7, 'cpu', T0 + 3 * S, 4),
      error(8, 'row', 'unexpected characters after a closing quote'),
      error(9, 'row', 'unterminated quoted field'),
    ]);
  });

  it('the download-csv case parses to exactly these items', async () => {
    expect(await collect(cases[1]![1])).toEqual([
      layout('download-csv'),
      point(2, 'température 😀', T0, 1.5),
      point(3, '指标 "x"', T0 + S, -2),
      error(4, 'timestamp', `${OFFSET_REQUIRED}; got "2024-01-01T00:00:02"`),
    ]);
  });

  it('the ndjson case parses to exactly these items', async () => {
    expect(await collect(cases[2]![1], cases[2]![2])).toEqual([
      layout('ndjson'),
      point(1, 'é😀', T0, 1),
      error(3, 'metric_name', 'differs from the upload\'s metric_name "é😀"; got "指标"'),
      error(4, 'row', jsonError('{"oops"')),
      point(5, 'é😀', T0 + 2 * S, 0),
    ]);
  });

  it('the json-body case parses to exactly these items', async () => {
    expect(await collect(cases[3]![1])).toEqual([layout('json-body'), point(1, 'é😀', T0, 1), error(2, 'timestamp', `${TS_FORMAT}; got "x"`)]);
  });

  it('a 4-byte character split across three chunks', async () => {
    const bytes = enc.encode('metric_name,timestamp,metric_numeric_value,updated_at\n😀,2024-01-01T00:00:00Z,1,2024-01-01T00:00:00Z\n');
    const at = bytes.indexOf(0xf0);
    const parts = [bytes.subarray(0, at + 1), bytes.subarray(at + 1, at + 2), bytes.subarray(at + 2)];
    expect(await collect(parts)).toEqual([layout('download-csv'), point(2, '😀', T0, 1)]);
  });
});

describe('parseUploadBatches: error limit', () => {
  const rows = (n: number) => Array.from({ length: n }, (_v, i) => `2024-01-01T00:00:00Z,v${i}`).join('\n');

  it('yields maxErrors errors, keeps yielding points, then counts the rest', async () => {
    const text = `${rows(3)}\n2024-01-01T00:00:00Z,1\n${rows(2)}\n2024-01-01T00:00:00Z,2\n`;
    expect(await collect(text, { ...M, maxErrors: 2 })).toEqual([
      layout('csv'),
      error(1, 'value', `${VALUE_FORMAT}; got "v0"`),
      error(2, 'value', `${VALUE_FORMAT}; got "v1"`),
      point(4, 'cpu', T0, 1),
      point(7, 'cpu', T0, 2),
      error(-1, 'row', '3 more errors not shown'),
    ]);
  });

  it('says "1 more error" and nothing when the limit is not passed', async () => {
    expect(await collect(rows(2), { ...M, maxErrors: 1 })).toEqual([
      layout('csv'),
      error(1, 'value', `${VALUE_FORMAT}; got "v0"`),
      error(-1, 'row', '1 more error not shown'),
    ]);
    expect(await collect(rows(2), { ...M, maxErrors: 2 })).toHaveLength(3);
    expect(await collect(rows(2), { ...M, maxErrors: 0 })).toEqual([layout('csv'), error(-1, 'row', '2 more errors not shown')]);
  });

  it('defaults to 100', async () => {
    const items = await collect(rows(150), M);
    expect(items).toHaveLength(102);
    expect(items[100]).toEqual(error(100, 'value', `${VALUE_FORMAT}; got "v99"`));
    expect(items[101]).toEqual(error(-1, 'row', '50 more errors not shown'));
  });

  it.each([-1, 1.5, Number.NaN])('rejects maxErrors %d', async (maxErrors) => {
    await expect(collect('', { maxErrors })).rejects.toThrow(RangeError);
  });
});

describe('parseUploadBatches: grouping', () => {
  it('gives the items of each input chunk as one array, and no empty arrays', async () => {
    const chunks = ['timestamp,value\n2024-01-01T00:00:00Z,1\n2024-01-01T00:00:01Z,', '2\n2024-01-01T00:00:02Z,x\n', '', '2024-01-01T00:00:03Z,4'];
    const batches: UploadItem[][] = [];
    for await (const items of parseUploadBatches(source(chunks.map((c) => enc.encode(c))), M)) batches.push(items);
    expect(batches).toEqual([
      [layout('csv-with-header'), point(2, 'cpu', T0, 1)],
      [point(3, 'cpu', T0 + S, 2), error(4, 'value', `${VALUE_FORMAT}; got "x"`)],
      [point(5, 'cpu', T0 + 3 * S, 4)], // the last line ends with the input, not with a newline
    ]);
  });
});

describe('parseUploadBatches: bounds', () => {
  const CHUNK = 65_536;
  const OK_ROW = '2024-01-01T00:00:00Z,1\n';

  /** Yields `total` characters: `head`, then `fill` repeated, in CHUNK-sized chunks; counts the chunks read. */
  function stream(head: string, fill: string, total: number): { chunks: AsyncGenerator<Uint8Array>; read: () => number } {
    let read = 0;
    const block = enc.encode(fill.repeat(Math.ceil(CHUNK / fill.length)).slice(0, CHUNK));
    async function* chunks(): AsyncGenerator<Uint8Array> {
      read++;
      yield enc.encode(head);
      for (let sent = head.length; sent < total; sent += CHUNK) {
        read++;
        yield block;
      }
    }
    return { chunks: chunks(), read: () => read };
  }

  async function collectFrom(chunks: AsyncIterable<Uint8Array>, options: ParseUploadOptions): Promise<UploadItem[]> {
    const items: UploadItem[] = [];
    for await (const batch of parseUploadBatches(chunks, options)) items.push(...batch);
    return items;
  }

  it('csv: a line longer than maxLineLength is a row error, and the next line still parses', async () => {
    const text = `${'1'.repeat(150)},1\n${OK_ROW}`;
    expect(await collect(text, { ...M, maxLineLength: 100 })).toEqual([
      layout('csv'),
      error(1, 'row', 'the line is longer than 100 characters'),
      point(2, 'cpu', T0, 1),
    ]);
  });

  it('csv: a quoted field that runs past maxLineLength, across chunks and lines, is one row error and its text is not kept', async () => {
    const parts = [OK_ROW, '2024-01-01T00:00:01Z,"', 'x\n'.repeat(200), 'x"\n', OK_ROW].map((p) => enc.encode(p));
    expect(await collect(parts, { ...M, maxLineLength: 100 })).toEqual([
      layout('csv'),
      point(1, 'cpu', T0, 1),
      error(2, 'row', 'the line is longer than 100 characters'),
      point(203, 'cpu', T0, 1),
    ]);
  });

  it('csv: a quoted field that never closes is one error for its line, however long the rest', async () => {
    const { chunks } = stream(`${OK_ROW}2024-01-01T00:00:01Z,"`, 'x,\n', 5_000_000);
    expect(await collectFrom(chunks, { ...M, maxLineLength: 1000 })).toEqual([
      layout('csv'),
      point(1, 'cpu', T0, 1),
      error(2, 'row', 'the line is longer than 1000 characters'),
    ]);
  });

  it('csv: a line of a million commas is one row error', async () => {
    const text = `${','.repeat(1_000_000)}\n${OK_ROW}`;
    expect(await collect(text, M)).toEqual([layout('csv'), error(1, 'row', 'the line is longer than 65536 characters'), point(2, 'cpu', T0, 1)]);
  });

  it('csv: a row with more than maxColumns fields is a row error, on the fast path and the quoted one', async () => {
    const wide = `${OK_ROW.trim()}${',x'.repeat(10)}\n`;
    const quotedWide = `"2024-01-01T00:00:00Z"${',x'.repeat(10)}\n`;
    expect(await collect(`${wide}${quotedWide}${OK_ROW}`, { ...M, maxColumns: 8 })).toEqual([
      layout('csv'),
      error(1, 'row', 'more than 8 columns'),
      error(2, 'row', 'more than 8 columns'),
      point(3, 'cpu', T0, 1),
    ]);
  });

  it('ndjson: the line bound is an option', async () => {
    const line = '{"timestamp":"2024-01-01T00:00:00Z","value":1}';
    expect(await collect(`${line}\n{"timestamp":"2024-01-01T00:00:00Z","value":${'1'.repeat(100)}}\n${line}\n`, { ...M, maxLineLength: 80 })).toEqual([
      layout('ndjson'),
      point(1, 'cpu', T0, 1),
      error(2, 'row', 'the line is longer than 80 characters'),
      point(3, 'cpu', T0, 1),
    ]);
  });

  it('json-body: the gzip bomb\'s text ({"values":[ and endless spaces) stops at the document bound, without reading on', async () => {
    const { chunks, read } = stream('{"values":[', ' ', 200 * CHUNK);
    expect(await collectFrom(chunks, { maxJsonDocumentLength: 4 * CHUNK })).toEqual([
      layout('json-body'),
      error(0, 'row', `the json-body document is longer than ${4 * CHUNK} characters; send larger sets as CSV or NDJSON, which are read as they stream`),
    ]);
    expect(read()).toBeLessThan(10);
  });

  it('json-array: a document within the bound parses; one character more is refused', async () => {
    const text = '[{"timestamp":"2024-01-01T00:00:00Z","value":1}]';
    expect(await collect(text, { ...M, maxJsonDocumentLength: text.length })).toEqual([layout('json-array'), point(1, 'cpu', T0, 1)]);
    expect(await collect(`${text} `, { ...M, maxJsonDocumentLength: text.length })).toEqual([
      layout('json-array'),
      error(0, 'row', `the json-array document is longer than ${text.length} characters; send larger sets as CSV or NDJSON, which are read as they stream`),
    ]);
  });

  it('50 MB of nested JSON fails with a reason as soon as it nests too deep', async () => {
    const { chunks, read } = stream('', '[', 50_000_000);
    expect(await collectFrom(chunks, M)).toEqual([layout('json-array'), error(0, 'row', `invalid JSON: nested deeper than ${MAX_JSON_NESTING} levels`)]);
    expect(read()).toBe(2);
    const body = stream('{"values":', '{"a":', 50_000_000);
    expect(await collectFrom(body.chunks, {})).toEqual([layout('json-body'), error(0, 'row', `invalid JSON: nested deeper than ${MAX_JSON_NESTING} levels`)]);
  });

  it('brackets inside strings do not count as nesting', async () => {
    const text = `[{"timestamp":"${'['.repeat(500)}\\"[","value":1}]`;
    expect(await collect(text, M)).toEqual([layout('json-array'), error(1, 'timestamp', `${TS_FORMAT}; got ${JSON.stringify(`${'['.repeat(64)}…`)}`)]);
  });

  it('a first line longer than maxLineLength that starts with { is a body, decided without holding the line', async () => {
    const { chunks, read } = stream('{"values":[', ' ', 200 * CHUNK);
    const items: UploadItem[] = [];
    for await (const batch of parseUploadBatches(chunks, { maxLineLength: 1024, maxJsonDocumentLength: 2 * CHUNK })) items.push(...batch);
    expect(items[0]).toEqual(layout('json-body'));
    expect(read()).toBeLessThan(5);
  });

  it('leading blank space beyond maxLineLength stops the upload', async () => {
    const { chunks, read } = stream('', ' \n', 100 * CHUNK);
    expect(await collectFrom(chunks, { ...M, maxLineLength: 1024 })).toEqual([error(0, 'row', 'the upload starts with more than 1024 blank characters')]);
    expect(read()).toBe(2);
  });

  it.each(['maxLineLength', 'maxColumns', 'maxJsonDocumentLength'])('rejects a %s that is not a positive integer', async (name) => {
    await expect(collect('', { [name]: 0 })).rejects.toThrow(RangeError);
  });
});

describe('parseUploadBatches: the per-run caches (a date, a metric name) change nothing', () => {
  const DL_HEADER = 'metric_name,timestamp,metric_numeric_value,updated_at\n';
  const U = '2024-01-03T00:00:00Z'; // updated_at

  /** Each row parsed alone by a fresh parser (nothing cached), renumbered as the row it is in the whole. */
  async function eachAlone(header: string, rows: readonly string[], options: ParseUploadOptions): Promise<UploadItem[]> {
    const out: UploadItem[] = [];
    for (let i = 0; i < rows.length; i++) {
      for (const item of await collect(`${header}${rows[i]}\n`, options)) if (item.kind !== 'layout') out.push({ ...item, row: item.row + i });
    }
    return out;
  }

  async function sameAsAlone(header: string, rows: readonly string[], options: ParseUploadOptions): Promise<UploadItem[]> {
    const whole = await collect(`${header}${rows.join('\n')}\n`, options);
    expect(whole.slice(1)).toEqual(await eachAlone(header, rows, options));
    return whole;
  }

  const downloadRows = [
    `cpu,2024-01-01T23:59:58Z,1,${U}`,
    `cpu,2024-01-01T23:59:59Z,2,${U}`,
    `cpu,2024-01-02T00:00:00Z,3,${U}`, // the date changes mid-run of one name
    `cpu2,2024-01-02T00:00:01Z,4,${U}`, // a name that extends the previous one
    `cpu,2024-01-02T00:00:02Z,5,${U}`, // a name that is a prefix of the previous one
    `cpu,2024-01-02T25:00:00Z,6,${U}`, // invalid after a cached valid date
    `cpu,2024-01-02T00:00:03,7,${U}`,
    `cpu,2024-01-02X00:00:03Z,8,${U}`,
    `cpu,2024-01-02T00:60:03Z,9,2024-01-03T00:00:00`,
    `cpu,2024-02-30T00:00:00Z,10,${U}`, // a date that looks like the cached one's neighbour, but does not exist
    `cpu,2024-01-02T00:00:04+01:00,11,${U}`,
    `cpu,2024-01-02T00:00:04.5-0130,12,${U}`,
    `=cpu,2024-01-02T00:00:05Z,13,${U}`, // an invalid name after valid ones
    `=cpu,2024-01-02T00:00:06Z,14,${U}`, // the same invalid name again: the cached problem
    `cpu,2024-01-02T00:00:07Z,x,${U}`,
    `cpu, 2024-01-02T00:00:08Z ,0.30000000000000004, ${U}`,
    `cpu,2024-01-02T00:00:09Z,1e-999,${U}`,
    `température.°C,2024-01-02T00:00:10Z,15,${U}`,
    `température.°C,2024-01-02T00:00:11Z,16,${U}`,
    `température.°F,2024-01-02T00:00:12Z,17,${U}`, // same length in characters, one differs
    `温度 📈,2024-01-02T00:00:13Z,18,${U}`,
    `温度 📈,2024-01-02T00:00:14Z,19,${U}`,
    `"温度 📈",2024-01-02T00:00:15Z,20,${U}`, // the quoted (slow) path, then the fast one again
    `温度 📈,2024-01-02T00:00:16Z,21,${U}`,
    `,2024-01-02T00:00:17Z,22,${U}`,
    `cpu,2024-01-02T00:00:18Z,23,2024-01-03T00:00:00.0001Z`,
    `cpu,2024-01-02T00:00:19Z,24,${U}`,
  ];

  it('download layout: every row as if it were parsed alone, errors and row numbers included', async () => {
    const whole = await sameAsAlone(DL_HEADER, downloadRows, {});
    const day2 = Date.UTC(2024, 0, 2);
    expect(whole).toContainEqual(point(4, 'cpu', day2, 3));
    expect(whole).toContainEqual(point(5, 'cpu2', day2 + S, 4));
    expect(whole).toContainEqual(point(6, 'cpu', day2 + 2 * S, 5));
    expect(whole).toContainEqual(error(7, 'timestamp', 'hour 25 is out of range 00-23; got "2024-01-02T25:00:00Z"'));
    expect(whole).toContainEqual(error(11, 'timestamp', 'day 30 does not exist in 2024-02; got "2024-02-30T00:00:00Z"'));
    expect(whole).toContainEqual(point(12, 'cpu', day2 + 4 * S - 60 * 60 * S, 11));
    expect(whole.flatMap((i) => (i.kind === 'error' && i.column === 'metric_name' ? [i.row] : []))).toEqual([14, 15, 26]);
    expect(whole).toContainEqual(point(17, 'cpu', day2 + 8 * S, 0.30000000000000004));
    expect(whole).toContainEqual(point(20, 'température.°C', day2 + 11 * S, 16));
    expect(whole).toContainEqual(point(21, 'température.°F', day2 + 12 * S, 17));
    expect(whole).toContainEqual(point(24, '温度 📈', day2 + 15 * S, 20));
    expect(whole).toContainEqual(point(25, '温度 📈', day2 + 16 * S, 21));
    expect(whole.at(-1)).toEqual(point(28, 'cpu', day2 + 19 * S, 24));
  });

  it('download layout with the upload naming the metric: the cached mismatch is reported on every row', async () => {
    const rows = [`cpu,2024-01-02T00:00:00Z,1,${U}`, `mem,2024-01-02T00:00:01Z,2,${U}`, `mem,2024-01-02T00:00:02Z,3,${U}`, `cpu,2024-01-02T00:00:03Z,4,${U}`];
    const whole = await sameAsAlone(DL_HEADER, rows, M);
    expect(whole.flatMap((i) => (i.kind === 'error' ? [i.row] : []))).toEqual([3, 4]);
  });

  it('2-column layout: dates changing, invalid rows after a cached prefix', async () => {
    const rows = [
      '2024-01-31T23:59:59Z,1',
      '2024-02-01T00:00:00Z,2',
      '2024-02-01T00:00:01+0000,3',
      '2024-02-01T24:00:00Z,4',
      '2024-02-01T00:00:02Z,',
      '2024-02-01T00:00:03.1234Z,5',
      '2024-02-29T00:00:00Z,6',
      '2023-02-29T00:00:00Z,7',
      '2024-02-01T00:00:04Z,8',
    ];
    const whole = await sameAsAlone('', rows, M);
    expect(whole).toContainEqual(point(2, 'cpu', Date.UTC(2024, 1, 1), 2));
    expect(whole).toContainEqual(point(7, 'cpu', Date.UTC(2024, 1, 29), 6));
    expect(whole).toContainEqual(error(8, 'timestamp', 'day 29 does not exist in 2023-02; got "2023-02-29T00:00:00Z"'));
    expect(whole.at(-1)).toEqual(point(9, 'cpu', Date.UTC(2024, 1, 1) + 4 * S, 8));
  });

  it('download layout with UTF-8 names: every split of the bytes gives the same items', async () => {
    const bytes = enc.encode(`${DL_HEADER}${downloadRows.slice(17).join('\n')}\n`);
    const whole = await collect(bytes, {});
    for (const size of [1, 2, 3, 5, 7, 64]) {
      const parts: Uint8Array[] = [];
      for (let at = 0; at < bytes.length; at += size) parts.push(bytes.subarray(at, at + size));
      expect(await collect(parts, {}), `chunks of ${size} bytes`).toEqual(whole);
    }
  });
});
