import { IncomingMessage, ServerResponse, type IncomingHttpHeaders } from 'node:http';
import { Socket } from 'node:net';

/** A request listener, such as a Koa app's callback() (which returns a promise). */
export type Listener = (req: IncomingMessage, res: ServerResponse) => unknown;

export type Injected = {
  readonly status: number;
  readonly headers: Record<string, string | string[] | number | undefined>;
  readonly body: Buffer;
  json(): any;
};

/**
 * One request through a Node request listener (a Koa app's callback()) with no server and no
 * port: the request is a stream of the given body, the response's writes are collected. For
 * route tests that need no real service; what depends on sockets (timeouts, a client that goes
 * away, framing) stays with the tests that serve on a port.
 */
export async function inject(
  listener: Listener,
  request: { method?: string; url: string; headers?: IncomingHttpHeaders; body?: string | Buffer },
): Promise<Injected> {
  const req = new IncomingMessage(new Socket());
  req.method = request.method ?? 'GET';
  req.url = request.url;
  const body = request.body === undefined ? undefined : Buffer.from(request.body);
  req.headers = { host: 'inject.test', ...(body ? { 'content-length': String(body.length) } : {}), ...request.headers };
  if (body) req.push(body);
  req.push(null);

  const res = new ServerResponse(req);
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve) => {
    const take = (chunk: unknown, encoding?: unknown) => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
    };
    res.write = ((chunk: unknown, encoding?: unknown) => {
      take(chunk, encoding);
      return true;
    }) as typeof res.write;
    res.end = ((chunk?: unknown, encoding?: unknown) => {
      take(chunk, encoding);
      // What on-finished and Koa read to know the response is over.
      (res as { finished: boolean }).finished = true;
      res.emit('finish');
      resolve();
      return res;
    }) as typeof res.end;
  });
  listener(req, res);
  await done;
  const text = Buffer.concat(chunks);
  return { status: res.statusCode, headers: res.getHeaders(), body: text, json: () => JSON.parse(text.toString('utf8')) };
}
