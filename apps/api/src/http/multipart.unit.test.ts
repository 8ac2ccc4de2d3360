import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { DomainError } from '@meridian/domain';
import { FORM_LIMITS, formDataFileName, multipartParser, readForm } from './multipart.ts';

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
    parser.on('file', (_field, stream, info) => {
      name = info.filename;
      stream.resume();
    });
    parser.on('close', () => resolve(name));
    parser.on('error', reject);
    parser.end(body);
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

const B = 'formformform';
const headers = { 'content-type': `multipart/form-data; boundary=${B}` };
const field = (name: string, value: string) => `--${B}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
const filePart = (content: string, name = 'file', filename: string | null = 'a.csv') =>
  `--${B}\r\nContent-Disposition: form-data; name="${name}"${filename === null ? '' : `; filename="${filename}"`}\r\nContent-Type: text/csv\r\n\r\n${content}\r\n`;
const end = `--${B}--\r\n`;

/** Reads `body` as a form whose file part is collected as text; what the form held, or the error's message and fields. */
async function read(body: Readable | string, received: string[] = []) {
  const stream = typeof body === 'string' ? Readable.from([Buffer.from(body)]) : body;
  return readForm(stream, headers, {
    requireFile: true,
    receive: async (part) => {
      let text = '';
      for await (const chunk of part.stream as AsyncIterable<Buffer>) text += chunk.toString();
      received.push(text);
      return { text, filename: part.filename };
    },
  });
}

describe('the multipart reader', () => {
  it('reads the file part and the text fields before and after it', async () => {
    const form = await read(field('a', '1') + filePart('x,y\n') + field('b', '2') + end);
    expect(form.file).toEqual({ text: 'x,y\n', filename: 'a.csv' });
    expect([...form.fields]).toEqual([
      ['a', '1'],
      ['b', '2'],
    ]);
  });

  it('refuses a body that ends before its closing boundary, as cut off', async () => {
    await expect(read(field('a', '1') + filePart('x,y\n').slice(0, -10))).rejects.toMatchObject({
      code: 'validation',
      message: expect.stringMatching(/closing boundary/),
    });
    await expect(read(field('a', '1'))).rejects.toMatchObject({ code: 'validation', message: expect.stringMatching(/closing boundary/) });
  });

  it('settles once, as interrupted, when the body fails mid-file, and the part consumer sees its stream fail', async () => {
    const body = new PassThrough();
    const received: string[] = [];
    const reading = read(body, received);
    body.write(filePart('x'.repeat(1000)).slice(0, 500));
    await new Promise((r) => setTimeout(r, 10));
    body.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    await expect(reading).rejects.toMatchObject({ code: 'validation', message: expect.stringMatching(/interrupted/) });
    expect(received).toEqual([]); // the consumer did not finish a part it never fully had
  });

  it('settles as interrupted when the body closes without ending', async () => {
    const body = new PassThrough();
    const reading = read(body);
    body.write(field('a', '1'));
    await new Promise((r) => setTimeout(r, 10));
    body.destroy();
    await expect(reading).rejects.toMatchObject({ message: expect.stringMatching(/interrupted/) });
  });

  it('refuses a second part named file, a file part without a filename, and a duplicate field, saying which', async () => {
    await expect(read(filePart('1') + filePart('2') + end)).rejects.toMatchObject({ message: expect.stringMatching(/more than one part named "file"/) });
    await expect(read(filePart('1', 'file', null) + end)).rejects.toMatchObject({ message: expect.stringMatching(/has no filename/) });
    await expect(read(field('a', '1') + field('a', '2') + filePart('1') + end)).rejects.toMatchObject({ message: expect.stringMatching(/"a" is given twice/) });
    await expect(read(field('a', '1') + end)).rejects.toMatchObject({ message: expect.stringMatching(/no part named "file"/) });
  });

  it('names the field limit when the file comes after too many fields, and the parts limit', async () => {
    const many = Array.from({ length: FORM_LIMITS.fields + 1 }, (_, i) => field(`f${i}`, 'v')).join('');
    await expect(read(many + filePart('1') + end)).rejects.toMatchObject({ message: expect.stringMatching(`more than ${FORM_LIMITS.fields} text fields`) });
    const files = Array.from({ length: FORM_LIMITS.parts + 1 }, (_, i) => filePart('1', `other${i}`)).join('');
    await expect(read(files + end)).rejects.toMatchObject({ message: expect.stringMatching(`more than ${FORM_LIMITS.parts}`) });
  });

  it("answers with the consumer's own error, after the consumer has let go of its part", async () => {
    const order: string[] = [];
    const reading = readForm(Readable.from([Buffer.from(filePart('x'.repeat(100_000)) + end)]), headers, {
      requireFile: true,
      receive: async (part) => {
        try {
          for await (const chunk of part.stream as AsyncIterable<Buffer>) if (chunk.length > 0) throw new DomainError('payload_too_large', 'too big');
        } finally {
          await new Promise((r) => setTimeout(r, 20));
          order.push('released');
        }
      },
    });
    await expect(reading.finally(() => order.push('answered'))).rejects.toMatchObject({ code: 'payload_too_large' });
    expect(order).toEqual(['released', 'answered']);
  });

  it('refuses a Content-Type without a boundary, and malformed part headers', async () => {
    await expect(
      readForm(Readable.from([Buffer.from('x')]), { 'content-type': 'multipart/form-data' }, { requireFile: true, receive: async () => null }),
    ).rejects.toMatchObject({ code: 'validation' });
    await expect(read(`--${B}\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n${'x'.repeat(100_000)}`)).rejects.toMatchObject({
      code: 'validation',
    });
  });
});
