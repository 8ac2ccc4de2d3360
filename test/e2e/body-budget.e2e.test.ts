import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { isolatedSettings } from '../support/settings.ts';

// The smallest budget the settings allow, with the JSON body limit lowered to fit in it, and a short wait.
const BUDGET = 1_048_576;
const WAIT_MS = 1500;
const settings = isolatedSettings({
  MERIDIAN_BODY_BYTES_IN_FLIGHT: String(BUDGET),
  MERIDIAN_MAX_JSON_BODY_BYTES: String(BUDGET),
  MERIDIAN_BODY_WAIT_MS: String(WAIT_MS),
  MERIDIAN_RATE_LIMIT_PER_SECOND: '0',
});
let api: RunningApi;
let root: string;

beforeAll(async () => {
  api = await startApi(settings);
  root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
});
afterAll(async () => {
  await api?.close();
});

const user = (name: string) => createUser(api.url, root, name, [{ match: 'prefix', value: `${name}.`, access: 'rw' }]);

/**
 * A JSON upload declaring `declared` bytes and sending a first part only: it holds its reservation
 * while the api waits for the rest. `cut` goes away.
 */
function heldUpload(key: string, declared: number) {
  const url = new URL(api.url);
  const socket = connect(Number(url.port), url.hostname);
  socket.on('error', () => undefined);
  socket.write(
    `POST /api/v1/metrics/upload HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n{"metric_name":`,
  );
  return { cut: () => socket.destroy() };
}

const held = async () => {
  const text = await (await fetch(`${api.url}/metrics`)).text();
  return Number(/^meridian_body_bytes_held (\d+)/m.exec(text)?.[1] ?? NaN);
};

const influx = (key: string, metric: string) =>
  fetch(`${api.url}/api/v2/write?precision=s`, { method: 'POST', headers: { Authorization: `Token ${key}` }, body: `${metric} value=1 1700000000\n` });

describe('the bodies one api instance holds at once, over every user (MERIDIAN_BODY_BYTES_IN_FLIGHT)', () => {
  it("past the budget another user's push waits unread, then gets 503 with Retry-After; a JSON upload waiting gets in once room is made", async () => {
    const holder = heldUpload(await user('bh'), BUDGET);
    await expect.poll(held, { timeout: 10_000 }).toBe(BUDGET);

    const other = await user('bo');
    const started = Date.now();
    const refused = await influx(other, 'bo.cpu');
    expect(Date.now() - started).toBeGreaterThanOrEqual(WAIT_MS - 50);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    const problem = (await refused.json()) as { type: string; detail: string };
    expect(problem.type).toBe('/problems/unavailable');
    expect(problem.detail).toContain('MERIDIAN_BODY_BYTES_IN_FLIGHT');

    // Waiting, not refused: the holder goes away while this one waits, and it is answered as usual.
    const waiting = call(`${api.url}/api/v1/metrics/upload`, other, {
      method: 'POST',
      body: { metric_name: 'bo.m', values: [{ timestamp: '2024-01-01T00:00:00Z', value: 1 }] },
    });
    await new Promise((r) => setTimeout(r, WAIT_MS / 3));
    holder.cut();
    expect((await waiting).status).toBe(202);
    await expect.poll(held, { timeout: 10_000 }).toBe(0);
  });
});
