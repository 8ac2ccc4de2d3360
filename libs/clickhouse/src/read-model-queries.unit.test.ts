import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_QUORUM } from './capabilities.ts';
import { readPositions, rowsQuery } from './read-model-queries.ts';

describe('rowsQuery', () => {
  // A ClickHouse that accepts every query and never answers.
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer(() => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('gives up on a query past its bound with an unavailable error (a 503, never a 500)', async () => {
    const query = rowsQuery({ url, username: 'default', password: '', database: 'default', readModelQueryTimeoutMs: 50 }, NO_QUORUM);
    await expect(readPositions(query, 'files_positions')).rejects.toMatchObject({ name: 'InfrastructureError', dependency: 'clickhouse', retriable: true });
  });
});
