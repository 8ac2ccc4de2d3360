import { connect } from 'node:net';

/**
 * Sends a request as raw bytes, so a test can send headers no HTTP client would
 * (non-ASCII, huge, malformed), and returns the status code of the answer.
 */
export function rawRequest(url: string, head: Buffer): Promise<{ status: number; raw: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', reject);
    socket.on('close', () => {
      const raw = Buffer.concat(chunks).toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
      resolve({ status, raw });
    });
    socket.end(head);
  });
}
