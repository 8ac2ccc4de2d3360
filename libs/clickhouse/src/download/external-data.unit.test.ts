import { describe, expect, it } from 'vitest';
import { externalTableParams, multipartBody, tsvField, tsvRows } from './external-data.ts';

describe('external data', () => {
  it('escapes what TabSeparated reads specially and nothing else', () => {
    expect(tsvField('a\\b\tc\nd\re')).toBe('a\\\\b\\tc\\nd\\re');
    expect(tsvField(`x'); DROP TABLE points; -- "q" %_:ü🎉`)).toBe(`x'); DROP TABLE points; -- "q" %_:ü🎉`);
    expect(
      tsvRows([
        ['a', 'b'],
        ['c\\', 'd'],
      ]),
    ).toBe('a\tb\nc\\\\\td\n');
  });

  it('describes each table with a structure and a format parameter', () => {
    expect(externalTableParams([{ name: 'names', structure: 'name String', rows: [] }])).toEqual([
      ['names_structure', 'name String'],
      ['names_format', 'TabSeparated'],
    ]);
    expect(() => externalTableParams([{ name: 'bad name', structure: 'name String', rows: [] }])).toThrow();
  });

  it('sends each table as a file part of a multipart form', () => {
    const { body, contentType } = multipartBody([
      { name: 'names', structure: 'name String', rows: [['a'], ['日本']] },
      { name: 'after_name', structure: 'name String', rows: [['b']] },
    ]);
    const boundary = /^multipart\/form-data; boundary=(.+)$/.exec(contentType)![1]!;
    expect(body.toString('utf8')).toBe(
      `--${boundary}\r\nContent-Disposition: form-data; name="names"; filename="names"\r\nContent-Type: application/octet-stream\r\n\r\na\n日本\n\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="after_name"; filename="after_name"\r\nContent-Type: application/octet-stream\r\n\r\nb\n\r\n` +
        `--${boundary}--\r\n`,
    );
  });
});
