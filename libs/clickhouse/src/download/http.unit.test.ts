import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryText, type ConnOptions } from './http.ts';

/** An in-process HTTP server standing in for one replica: answers `status` with its name, counts requests. */
async function replica(name: string, status: number) {
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => res.writeHead(status).end(name));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, requests: () => requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('read failover across the replicas of a cluster (CLICKHOUSE_URLS)', () => {
  let down: string;
  let up: Awaited<ReturnType<typeof replica>>;
  let failing: Awaited<ReturnType<typeof replica>>;
  const conn = (url: string, fallbackUrls: string[]): ConnOptions => ({ url, username: 'default', password: '', database: 'meridian', fallbackUrls });

  beforeAll(async () => {
    const gone = await replica('gone', 200);
    down = gone.url;
    await gone.close(); // a port nothing listens on any more: connection refused
    up = await replica('ch2', 200);
    failing = await replica('ch1', 500);
  });
  afterAll(async () => Promise.all([up.close(), failing.close()]));

  it('a server that cannot be reached is passed over for the next one', async () => {
    expect(await queryText(conn(down, [up.url]), { sql: 'SELECT 1' })).toBe('ch2');
  });

  it('without another server the refusal is the answer', async () => {
    await expect(queryText(conn(down, []), { sql: 'SELECT 1' })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('a server that answered (even with an error) ran the query: no second server is asked', async () => {
    const before = up.requests();
    await expect(queryText(conn(failing.url, [up.url]), { sql: 'SELECT 1' })).rejects.toThrow(/ClickHouse answered 500: ch1/);
    expect(up.requests()).toBe(before);
  });
});

describe('kept-alive connections for read-model lookups (reuseConnection)', () => {
  let server: http.Server;
  let url: string;
  let connections = 0;
  let requests = 0;
  /** Requests (by their number) the server drops unanswered, closing their connection: a server closing an idle socket as the request arrives. */
  const dropped = new Set<number>();
  const conn = (): ConnOptions => ({ url, username: 'default', password: '', database: 'meridian' });

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const n = ++requests;
      req.resume();
      req.on('end', () => (dropped.has(n) ? req.socket.destroy() : res.end(`answer ${n}`)));
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('sends lookups one after another on one connection', async () => {
    const before = connections;
    expect(await queryText(conn(), { sql: 'SELECT 1', reuseConnection: true })).toMatch(/^answer/);
    expect(await queryText(conn(), { sql: 'SELECT 1', reuseConnection: true })).toMatch(/^answer/);
    expect(connections - before).toBe(1);
  });

  it('a kept-alive socket the server closes as the query arrives: the query is sent again on a new connection', async () => {
    await queryText(conn(), { sql: 'SELECT 1', reuseConnection: true });
    const before = connections;
    dropped.add(requests + 1);
    expect(await queryText(conn(), { sql: 'SELECT 1', reuseConnection: true })).toBe(`answer ${requests}`);
    expect(connections - before).toBe(1);
  });

  it('a new connection closed without an answer is not tried again: the query may have run', async () => {
    dropped.add(requests + 1);
    const before = requests;
    await expect(queryText(conn(), { sql: 'SELECT 1' })).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect(requests - before).toBe(1);
  });
});

describe('kept-alive connections (reuseConnection)', () => {
  const conn: ConnOptions = { url: 'http://127.0.0.1:9', username: 'default', password: '', database: 'meridian' };

  it('are refused for anything but a SELECT, before any request: a write sent again after a stale socket could run twice', async () => {
    for (const sql of ['INSERT INTO points FORMAT Native', 'ALTER TABLE points DELETE WHERE 1', ' DROP TABLE x', 'OPTIMIZE TABLE points']) {
      await expect(queryText(conn, { sql, reuseConnection: true })).rejects.toThrow('for SELECT queries only');
    }
  });

  it('are taken for a SELECT, with or without a WITH clause', async () => {
    const server = await replica('ok', 200);
    try {
      for (const sql of ['SELECT 1', '  select 1', 'WITH 1 AS x SELECT x'])
        expect(await queryText({ ...conn, url: server.url }, { sql, reuseConnection: true })).toBe('ok');
    } finally {
      await server.close();
    }
  });
});
