import { createServer, get, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { releasedOnceSent } from './sent-buffers.ts';

const PIECES = 40;
const PIECE_BYTES = 1 << 20;

/** Serves PIECES buffers of PIECE_BYTES, piece i filled with the byte i, through releasedOnceSent; `made` keeps every piece for the test to look at. */
async function serve(made: Buffer[]): Promise<{ url: string; close(): void; finished: Promise<void> }> {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const server = createServer((_req, res) => {
    res.once('finish', () => setImmediate(finish));
    const pieces = (async function* () {
      for (let i = 0; i < PIECES; i++) {
        const piece = Buffer.alloc(PIECE_BYTES, i);
        made.push(piece);
        yield piece;
      }
    })();
    pipeline(releasedOnceSent(pieces, res), res, () => undefined); // a failure shows as missing bytes below
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, close: () => server.close(), finished };
}

describe('releasedOnceSent', () => {
  it('frees each piece once the socket wrote it, never before: a slow reader gets every byte, and all are freed by the end', async () => {
    const made: Buffer[] = [];
    const { url, close, finished } = await serve(made);
    const res = await new Promise<IncomingMessage>((resolve, reject) => get(url, resolve).once('error', reject));
    let offset = 0;
    let wrong = 0;
    let freedWhileStreaming = 0;
    for await (const chunk of res as AsyncIterable<Buffer>) {
      for (let j = 0; j < chunk.length; j++) if (chunk[j] !== Math.floor((offset + j) / PIECE_BYTES)) wrong++;
      offset += chunk.length;
      // A slow reader: the pieces not yet written wait in the socket, and must not be freed.
      await new Promise((resolve) => setTimeout(resolve, 1));
      freedWhileStreaming = Math.max(freedWhileStreaming, made.filter((p) => p.length === 0).length);
    }
    await finished;
    close();
    expect(offset).toBe(PIECES * PIECE_BYTES);
    expect(wrong).toBe(0);
    // Freed as the socket took them, not only at the end.
    expect(freedWhileStreaming).toBeGreaterThan(PIECES / 2);
    expect(made.every((p) => p.length === 0)).toBe(true);
  });
});
