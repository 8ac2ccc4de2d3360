import { request } from 'node:http';
import { formatTimestamp } from '@meridian/domain';

export type Answer = { status: number; headers: Record<string, string | string[] | undefined>; text: string; json: any };

/**
 * Sends a body as a client that reads while it writes (curl does): the body goes out in
 * 64 KiB writes, each after the last drained, and stops once an answer has come. So a server
 * that refuses a large body early (413, 403) and closes is heard, as it would not be by a
 * client still pushing the whole body into a closed connection (EPIPE). An error of the
 * connection before any answer rejects.
 */
export function send(url: string, init: { method?: string; key?: string | null; headers?: Record<string, string>; body?: Buffer | string }): Promise<Answer> {
  const body = init.body === undefined ? undefined : Buffer.from(init.body);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(
      url,
      {
        method: init.method ?? 'POST',
        headers: {
          ...(init.key ? { Authorization: `Bearer ${init.key}` } : {}),
          ...(body ? { 'Content-Length': String(body.length) } : {}),
          ...init.headers,
        },
      },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', () => {
          /* cut after the head: the head is the answer */
        });
        res.on('close', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: any;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
          req.destroy(); // a body the server did not want is not sent on
        });
      },
    );
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    const drained = () =>
      new Promise<void>((r) => {
        const done = () => {
          req.off('drain', done);
          req.off('response', done);
          req.off('close', done);
          r();
        };
        req.on('drain', done).on('response', done).on('close', done);
      });
    void (async () => {
      const CHUNK = 64 * 1024;
      for (let at = 0; body && at < body.length; at += CHUNK) {
        if (answered || req.destroyed) return;
        if (!req.write(body.subarray(at, at + CHUNK))) await drained();
      }
      if (!answered && !req.destroyed) req.end();
    })();
  });
}

/** `count` points of a CSV file (timestamp,value), one a second from 2024-01-01. */
export function csvPoints(count: number, t0 = Date.UTC(2024, 0, 1)): string {
  return Array.from({ length: count }, (_, i) => `${formatTimestamp(t0 + i * 1000)},${i}\n`).join('');
}

/** POST /api/v1/metrics_file_upload with the file as the body. */
export function uploadFile(apiUrl: string, key: string, body: Buffer | string, query: Record<string, string> = {}): Promise<Answer> {
  return send(`${apiUrl}/api/v1/metrics_file_upload?${new URLSearchParams(query)}`, { key, body, headers: { 'Content-Type': 'application/octet-stream' } });
}
