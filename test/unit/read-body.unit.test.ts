import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBody } from '../../apps/api/src/uploads/read-body.ts';

// readBody on a real loopback HTTP server: each request's body is read as a route reads it, and
// what came back is described in the answer.
const LIMIT = 1 << 20;
let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    readBody(req, LIMIT).then(
      (body) => {
        const own = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
        res.end(JSON.stringify({ bytes: body.length, sum: body.reduce((a, b) => (a + b) % 65521, 0), own }));
      },
      (error: Error & { code?: string }) => {
        res.statusCode = error.code === 'payload_too_large' ? 413 : 500;
        res.end(error.message);
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** POSTs `body` in pieces of `piece` bytes, with its Content-Length or chunked. */
function post(body: Buffer, piece: number, declared: boolean): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ port, method: 'POST', headers: declared ? { 'content-length': body.length } : {} }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    for (let at = 0; at < body.length; at += piece) req.write(body.subarray(at, at + piece));
    req.end();
  });
}

const bodyOf = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + 7) % 251));
const sumOf = (b: Buffer) => b.reduce((a, x) => (a + x) % 65521, 0);

describe('readBody', () => {
  it('reads a declared body, sent in many pieces, into one buffer of its own', async () => {
    const body = bodyOf(300_000);
    const answer = await post(body, 7_001, true);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toEqual({ bytes: body.length, sum: sumOf(body), own: true });
  });

  it('reads a chunked body without a Content-Length', async () => {
    const body = bodyOf(200_000);
    const answer = await post(body, 65_536, false);
    expect(JSON.parse(answer.text)).toMatchObject({ bytes: body.length, sum: sumOf(body) });
  });

  it('refuses a body past the limit, declared or not', async () => {
    const body = bodyOf(LIMIT + 1);
    expect((await post(body, 65_536, true)).status).toBe(413);
    expect((await post(body, 65_536, false)).status).toBe(413);
  });
});
