import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { formDataFileName, multipartParser } from './multipart.ts';

/** The file name busboy reports for one part whose Content-Disposition parameters are `disposition` (raw bytes). */
function partFileName(disposition: Buffer): Promise<string | undefined> {
  const boundary = 'b0undary';
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; `),
    disposition,
    Buffer.from(`\r\nContent-Type: text/csv\r\n\r\na,b\n\r\n--${boundary}--\r\n`),
  ]);
  return new Promise((resolve, reject) => {
    const parser = multipartParser({ 'content-type': `multipart/form-data; boundary=${boundary}` }, { files: 1 });
    let name: string | undefined;
    parser.on('file', (_field, stream, info) => { name = info.filename; stream.resume(); });
    parser.on('close', () => resolve(name));
    parser.on('error', reject);
    Readable.from([body]).pipe(parser);
  });
}

describe('multipart file names', () => {
  it('reads raw UTF-8 parameters as UTF-8 and decodes the WHATWG escapes of a browser, curl or requests', async () => {
    const raw = await partFileName(Buffer.from('filename="rapport %22été%22 ✓.csv"', 'utf8'));
    expect(raw).toBe('rapport %22été%22 ✓.csv');
    expect(formDataFileName(raw)).toBe('rapport "été" ✓.csv');
  });

  it('keeps the RFC 5987 filename* form working', async () => {
    const raw = await partFileName(Buffer.from(`filename*=UTF-8''rapport%20%22%C3%A9t%C3%A9%22%20%E2%9C%93.csv`));
    expect(formDataFileName(raw)).toBe('rapport "été" ✓.csv');
  });

  it.each([
    ['a%22b%22.csv', 'a"b".csv'],
    ['line%0Abreak%0d.csv', 'line\nbreak\r.csv'],
    ['100%25.csv', '100%25.csv'], // only the three escapes WHATWG writes: a client's other %XX is its name
    ['%C3%A9.csv', '%C3%A9.csv'],
    ['%2', '%2'],
    ['plain.csv', 'plain.csv'],
  ])('decodes %j as %j', (raw, name) => expect(formDataFileName(raw)).toBe(name));

  it('has no name for a part without one', () => expect(formDataFileName(undefined)).toBeNull());
});
