import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP proxy in front of ClickHouse that keeps the text of every query sent through it
 * (the `query` URL parameter and the start of the body, where @clickhouse/client puts it), so a
 * test sees exactly which queries an app ran.
 */
export type RecordingProxy = {
  readonly url: string;
  /** The queries seen so far, in arrival order. */
  queries(): readonly string[];
  /** The URL parameters of each query seen (settings travel there), in the same order. */
  params(): readonly URLSearchParams[];
  close(): Promise<void>;
};

/** Bytes of a request body kept per query: enough for any statement, not for bulk inserts. */
const KEPT_BODY_BYTES = 64 * 1024;

export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const seen: string[] = [];
  const seenParams: URLSearchParams[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', upstream);
    const kept: Buffer[] = [];
    let keptBytes = 0;
    const forward = http.request(url, { method: req.method, headers: { ...req.headers, host: upstream.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    res.on('close', () => {
      if (!res.writableFinished) forward.destroy();
    });
    req.on('data', (chunk: Buffer) => {
      if (keptBytes < KEPT_BODY_BYTES) kept.push(chunk);
      keptBytes += chunk.length;
    });
    req.on('end', () => {
      seen.push(`${url.searchParams.get('query') ?? ''}\n${Buffer.concat(kept).toString('utf8')}`);
      seenParams.push(url.searchParams);
    });
    req.pipe(forward);
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    queries: () => [...seen],
    params: () => [...seenParams],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
