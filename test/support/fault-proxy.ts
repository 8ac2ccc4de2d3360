import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy in front of a server (ClickHouse) that a test switches between passing bytes
 * through and failing connections the ways a dying server fails them, so an app behind it meets
 * an outage while the shared server runs on untouched.
 *
 * - forward: bytes pass both ways.
 * - refuse: the port is closed: a connect fails with ECONNREFUSED (as after kill -9).
 * - reset: the connection is accepted, and reset (RST) once the request's first bytes arrive.
 * - hang_up: the connection is accepted, and closed without a byte of answer (`socket hang up`).
 * - cut_answer: bytes pass, and the connection is reset once more than `cutAfterBytes` of
 *   answer have passed (the server dying mid-stream).
 */
export type FaultMode = 'forward' | 'refuse' | 'reset' | 'hang_up' | 'cut_answer';

export type FaultProxy = {
  readonly url: string;
  /**
   * Switches mode for connections made from now on (and closes or reopens the port for refuse).
   * Any mode but forward also ends the connections already open, as a dying server does: an
   * app's idle keep-alive connection made while forwarding would otherwise still reach the
   * server, and a request that happens to take it would not meet the outage. `connections`:
   * only that many new connections meet the mode, then the proxy forwards again (a blip).
   */
  set(mode: FaultMode, options?: { cutAfterBytes?: number; connections?: number }): Promise<void>;
  close(): Promise<void>;
};

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const upstream = new URL(target);
  let mode: FaultMode = 'forward';
  let cutAfterBytes = Number.POSITIVE_INFINITY;
  let failingLeft = Number.POSITIVE_INFINITY;
  const open = new Set<net.Socket>();

  const server = net.createServer((client) => {
    open.add(client);
    client.once('close', () => open.delete(client));
    client.on('error', () => undefined);
    const current = mode;
    // The blip's last failing connection: the ones after it are forwarded.
    if (current !== 'forward' && --failingLeft === 0) mode = 'forward';
    if (current === 'reset' || current === 'hang_up') {
      client.once('data', () => (current === 'reset' ? client.resetAndDestroy() : client.end()));
      return;
    }
    const limit = current === 'cut_answer' ? cutAfterBytes : Number.POSITIVE_INFINITY;
    const server = net.connect(Number(upstream.port), upstream.hostname);
    server.on('error', () => client.destroy());
    client.on('close', () => server.destroy());
    server.on('close', () => client.end());
    let answered = 0;
    server.on('data', (chunk: Buffer) => {
      answered += chunk.length;
      if (answered > limit) {
        server.destroy();
        client.resetAndDestroy();
        return;
      }
      client.write(chunk);
    });
    client.pipe(server);
  });

  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  const stopListening = () =>
    new Promise<void>((resolve) => {
      for (const socket of open) socket.destroy();
      if (!server.listening) return resolve();
      server.close(() => resolve());
    });

  await listen(0);
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async set(next, options = {}) {
      mode = next;
      cutAfterBytes = options.cutAfterBytes ?? Number.POSITIVE_INFINITY;
      failingLeft = options.connections ?? Number.POSITIVE_INFINITY;
      if (next !== 'forward') for (const socket of open) socket.destroy();
      if (next === 'refuse') await stopListening();
      else if (!server.listening) await listen(port);
    },
    close: stopListening,
  };
}
