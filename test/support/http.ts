import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import { createHttpServer, type HttpServerOptions } from '@meridian/api';

export type Served = { readonly url: string; close(): Promise<void> };

/** Serves a Koa app on an ephemeral loopback port for the length of a test; with options, on the api's own server (timeouts, sizes). */
export async function serve(app: Koa, options?: HttpServerOptions): Promise<Served> {
  const server = (options ? createHttpServer(options, app) : app).listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
