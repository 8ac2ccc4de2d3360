import { createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP server on loopback that accepts connections and never answers: a client talking to it
 * is under way and waiting (a request in flight to interrupt, a timeout to reach).
 */
export class SilentServer {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #connections = 0;
  #url = '';

  private constructor() {
    this.#server = createServer((socket) => {
      this.#connections++;
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
  }

  static async start(): Promise<SilentServer> {
    const silent = new SilentServer();
    await new Promise<void>((resolve) => silent.#server.listen(0, '127.0.0.1', resolve));
    silent.#url = `http://127.0.0.1:${(silent.#server.address() as { port: number }).port}`;
    return silent;
  }

  get url(): string {
    return this.#url;
  }

  /** Connections accepted so far. */
  get connections(): number {
    return this.#connections;
  }

  close(): void {
    for (const s of this.#sockets) s.destroy();
    this.#server.close();
  }
}
