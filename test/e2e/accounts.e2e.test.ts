import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountsCodec } from '@meridian/domain';
import { createKafka } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { meridian } from '../support/cli.ts';
import { startApp } from '../support/processes.ts';
import { rawRequest } from '../support/raw-http.ts';
import { isolatedSettings, settingsEnv } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

const settings = isolatedSettings();
let a: RunningApi;
let b: RunningApi;
let rootKey: string;
const issuedKeys: string[] = [];

beforeAll(async () => {
  a = await startApi(settings);
  const boot = await meridian(settings, ['users', 'add', 'root', '--admin', '--json']);
  expect(boot.stderr).toBe('');
  expect(boot.code).toBe(0);
  const created = JSON.parse(boot.stdout) as { user_name: string; api_key: string };
  expect(created.user_name).toBe('root');
  rootKey = created.api_key;
  issuedKeys.push(rootKey);
  b = await startApi(settings);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

describe('accounts and authentication', () => {
  let adaKey: string;

  it('a key issued by the CLI works on GET /users; an admin sees every user', async () => {
    await waitFor('api a to see root', () => (a.api.accounts.state.users.has('root') ? true : undefined));
    const res = await call(`${a.url}/api/v1/users`, rootKey);
    expect(res.status).toBe(200);
    expect(res.json.users).toEqual([
      expect.objectContaining({
        user_name: 'root',
        is_admin: true,
        disabled: false,
        entitlements: { metrics: [] },
        api_keys: [expect.objectContaining({ key_id: expect.stringMatching(/^[0-9a-f]{16}$/) })],
      }),
    ]);
    expect(res.json.users[0].created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?\+0000$/);
  });

  it('an admin creates a user; the user sees only itself and no admin route', async () => {
    const res = await call(`${a.url}/api/v1/users`, rootKey, { method: 'POST', body: { user_name: 'ada' } });
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({ user_name: 'ada', key_id: expect.any(String), api_key: expect.stringMatching(/^mrd_/) });
    adaKey = res.json.api_key;
    issuedKeys.push(adaKey);

    const mine = await call(`${a.url}/api/v1/users`, adaKey);
    expect(mine.status).toBe(200);
    expect(mine.json.users.map((u: { user_name: string }) => u.user_name)).toEqual(['ada']);

    for (const [method, path, body] of [
      ['POST', '/api/v1/users', { user_name: 'eve' }],
      ['PUT', '/api/v1/users/ada/entitlements', { metrics: [{ match: 'prefix', value: '', access: 'rw' }] }],
      ['DELETE', '/api/v1/users/root', undefined],
    ] as const) {
      const denied = await call(`${a.url}${path}`, adaKey, { method, body });
      expect(denied.status, `${method} ${path}`).toBe(403);
      expect(denied.json.type).toBe('/problems/forbidden');
    }
  });

  it('admin routes validate names and report duplicates and unknown users', async () => {
    expect((await call(`${a.url}/api/v1/users`, rootKey, { method: 'POST', body: { user_name: 'bad name!' } })).status).toBe(400);
    expect((await call(`${a.url}/api/v1/users`, rootKey, { method: 'POST', body: { user_name: 'ada' } })).status).toBe(409);
    expect((await call(`${a.url}/api/v1/users`, rootKey, { method: 'POST', body: { user_name: 'x'.repeat(65) } })).status).toBe(400);
    expect((await call(`${a.url}/api/v1/users/ghost/entitlements`, rootKey, { method: 'PUT', body: { metrics: [] } })).status).toBe(404);
    const malformed = await fetch(`${a.url}/api/v1/users`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${rootKey}`, 'Content-Type': 'application/json' },
      body: '{"user_name":',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.headers.get('content-type')).toMatch(/problem\+json/);
  });

  it('entitlements are replaced by an admin and shown to the user', async () => {
    const rules = [
      { match: 'prefix', value: 'cpu:', access: 'r' },
      { match: 'exact', value: 'cpu:load', access: 'rw' },
    ];
    const res = await call(`${a.url}/api/v1/users/ada/entitlements`, rootKey, { method: 'PUT', body: { metrics: rules } });
    expect(res.status).toBe(200);
    expect(res.json.entitlements.metrics).toEqual(rules);
    const bad = await call(`${a.url}/api/v1/users/ada/entitlements`, rootKey, {
      method: 'PUT',
      body: { metrics: [{ match: 'glob', value: 'x', access: 'w' }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.errors.map((e: { field: string }) => e.field)).toEqual(['body.metrics.0.match', 'body.metrics.0.access']);
  });

  it('a revoked key stops working on another api instance within one second', async () => {
    const created = await call(`${a.url}/api/v1/api_keys`, adaKey, { method: 'POST' });
    expect(created.status).toBe(201);
    const second = created.json.api_key as string;
    issuedKeys.push(second);
    await waitFor('instance b to accept the new key', async () => ((await call(`${b.url}/api/v1/users`, second)).status === 200 ? true : undefined), 5000);
    const listed = await call(`${a.url}/api/v1/api_keys`, adaKey);
    expect(listed.json.api_keys.map((k: { key_id: string }) => k.key_id)).toContain(created.json.key_id);
    expect(listed.text).not.toContain(second);

    const revoked = await call(`${a.url}/api/v1/api_keys/${created.json.key_id}`, adaKey, { method: 'DELETE' });
    expect(revoked.status).toBe(204);
    expect((await call(`${a.url}/api/v1/users`, second)).status).toBe(401); // read-your-writes on a
    const started = Date.now();
    await waitFor(
      'instance b to refuse the revoked key',
      async () => ((await call(`${b.url}/api/v1/users`, second)).status === 401 ? true : undefined),
      1000,
      20,
    );
    expect(Date.now() - started).toBeLessThan(1000);
    // Another user's key id is not found, not forbidden.
    const rootKeyId = (await call(`${a.url}/api/v1/api_keys`, rootKey)).json.api_keys[0].key_id;
    expect((await call(`${a.url}/api/v1/api_keys/${rootKeyId}`, adaKey, { method: 'DELETE' })).status).toBe(404);
  });

  it('a disabled user is refused with the same 401; the CLI lists it as disabled', async () => {
    const created = await call(`${a.url}/api/v1/users`, rootKey, { method: 'POST', body: { user_name: 'bob' } });
    expect(created.status).toBe(201);
    const bobKey = created.json.api_key as string;
    issuedKeys.push(bobKey);
    expect((await call(`${a.url}/api/v1/users`, bobKey)).status).toBe(200);
    expect((await call(`${a.url}/api/v1/users/bob`, rootKey, { method: 'DELETE' })).status).toBe(204);
    const refused = await call(`${a.url}/api/v1/users`, bobKey);
    expect(refused.status).toBe(401);
    expect(refused.json.detail).toBe((await call(`${a.url}/api/v1/users`, 'mrd_nonsense')).json.detail);
    expect((await call(`${a.url}/api/v1/users/bob`, rootKey, { method: 'DELETE' })).status).toBe(404);
    const listed = await meridian(settings, ['users', 'list', '--json']);
    expect(JSON.parse(listed.stdout).map((u: { user_name: string; disabled: boolean }) => [u.user_name, u.disabled])).toEqual([
      ['ada', false],
      ['bob', true],
      ['root', false],
    ]);
  });

  it('every kind of bad Authorization header gets 401 with WWW-Authenticate, never a 500', async () => {
    const headers: Array<string | null> = [
      null,
      '',
      'Bearer',
      'Bearer ',
      'Basic dXNlcjpwYXNz',
      `Bearer ${'x'.repeat(10_000)}`,
      'Bearer mrd_0000000000000000_' + 'A'.repeat(43),
      'Token mrd_0000000000000000_' + 'A'.repeat(43),
      `Basic ${Buffer.from('agent:mrd_0000000000000000_' + 'A'.repeat(43)).toString('base64')}`,
      'bearer',
      'Bearer a b c',
    ];
    for (const h of headers) {
      const res = await call(`${a.url}/api/v1/users`, null, { headers: h === null ? {} : { Authorization: h } });
      expect(res.status, JSON.stringify(h?.slice(0, 40))).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(res.json).toMatchObject({ type: '/problems/unauthenticated', status: 401 });
    }
    // The schemes agents send carry a good key as Bearer does: Influx's Token, and Basic with the key as the password.
    for (const h of [`Token ${rootKey}`, `Basic ${Buffer.from(`agent:${rootKey}`).toString('base64')}`]) {
      expect((await call(`${a.url}/api/v1/users`, null, { headers: { Authorization: h } })).status, h.split(' ')[0]).toBe(200);
    }
    for (const raw of [
      Buffer.from('Bearer \u00e9\u00e8\u00ff', 'latin1'),
      Buffer.from('Bearer 😀', 'utf8'),
      Buffer.from([0x42, 0x65, 0x61, 0x72, 0x65, 0x72, 0x20, 0x80, 0xfe]),
    ]) {
      const head = Buffer.concat([Buffer.from(`GET /api/v1/users HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: `), raw, Buffer.from('\r\n\r\n')]);
      const res = await rawRequest(a.url, head);
      expect([400, 401]).toContain(res.status);
    }
  });

  it('the event log holds no plaintext key', async () => {
    const kafka = createKafka({ brokers: settings.KAFKA_BROKERS.split(','), clientId: 'scan', logger: createLogger({ name: 't', level: 'silent' }) });
    const consumer = kafka.consumer({ groupId: `${settings.MERIDIAN_TOPIC_PREFIX}scan` });
    const values: Buffer[] = [];
    await consumer.connect();
    await consumer.subscribe({ topic: `${settings.MERIDIAN_TOPIC_PREFIX}accounts`, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        values.push(message.value!);
      },
    });
    await waitFor('the accounts events', () => (values.length >= 7 ? true : undefined), 20_000);
    await consumer.disconnect();
    const all = Buffer.concat(values);
    expect(issuedKeys.length).toBeGreaterThanOrEqual(3);
    for (const key of issuedKeys) {
      expect(all.includes(Buffer.from(key))).toBe(false);
      expect(all.includes(Buffer.from(key.slice('mrd_0123456789abcdef_'.length)))).toBe(false); // nor its secret part (which may itself hold '_')
    }
  });

  it('a restarted api rebuilds the same account state from the log', async () => {
    const before = JSON.stringify(accountsCodec.toJSON(a.api.accounts.state));
    const c = await startApi(settings);
    try {
      expect(JSON.stringify(accountsCodec.toJSON(c.api.accounts.state))).toBe(before);
      expect((await call(`${c.url}/api/v1/users`, rootKey)).json.users.length).toBe(3);
    } finally {
      await c.close();
    }
  });
});

describe('account commands under concurrency and from the CLI', () => {
  it('two instances creating the same user at once: one 201, one 409, and the 201 key is the one that works', async () => {
    const [x, y] = await Promise.all([a, b].map((api) => call(`${api.url}/api/v1/users`, rootKey, { method: 'POST', body: { user_name: 'cat' } })));
    expect([x!.status, y!.status].sort()).toEqual([201, 409]);
    const winner = (x!.status === 201 ? x : y)!;
    issuedKeys.push(winner.json.api_key);
    for (const api of [a, b]) {
      await waitFor(
        'the user on both instances',
        async () => ((await call(`${api.url}/api/v1/users`, winner.json.api_key)).status === 200 ? true : undefined),
        5000,
      );
    }
  });

  it('concurrent entitlement replacements on one instance end in one of the requested rule sets, never a mix', async () => {
    const sets = [
      [{ match: 'exact', value: 'one', access: 'r' }],
      [{ match: 'exact', value: 'two', access: 'rw' }],
      [{ match: 'prefix', value: 'three.', access: 'r' }],
    ];
    const results = await Promise.all(sets.map((metrics) => call(`${a.url}/api/v1/users/cat/entitlements`, rootKey, { method: 'PUT', body: { metrics } })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    const final = (await call(`${a.url}/api/v1/users`, rootKey)).json.users.find((u: { user_name: string }) => u.user_name === 'cat').entitlements.metrics;
    expect(sets).toContainEqual(final);
  });

  it('meridian grant adds one rule to the latest set and refuses an empty prefix; keys revoke ends a CLI-issued key', async () => {
    const made = await meridian(settings, ['users', 'add', 'dan', '--json']);
    expect(made.code).toBe(0);
    const dan = JSON.parse(made.stdout) as { api_key: string; key_id: string };
    issuedKeys.push(dan.api_key);
    expect((await meridian(settings, ['grant', 'dan', '--prefix', 'cpu.', '--access', 'r'])).code).toBe(0);
    expect((await meridian(settings, ['grant', 'dan', '--exact', 'cpu.load', '--access', 'rw'])).code).toBe(0);
    const empty = await meridian(settings, ['grant', 'dan', '--prefix=', '--access', 'rw']);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/invalid metric rules/);
    await waitFor('the grants on api a', () => (a.api.accounts.state.users.get('dan')?.entitlements.length === 2 ? true : undefined), 5000);
    const mine = await call(`${a.url}/api/v1/users`, dan.api_key);
    expect(mine.json.users[0].entitlements.metrics).toEqual([
      { match: 'prefix', value: 'cpu.', access: 'r' },
      { match: 'exact', value: 'cpu.load', access: 'rw' },
    ]);

    const revoked = await meridian(settings, ['keys', 'revoke', dan.key_id]);
    expect(revoked).toMatchObject({ code: 0, stdout: `revoked key ${dan.key_id} of dan\n` });
    await waitFor(
      'api a to refuse the revoked CLI key',
      async () => ((await call(`${a.url}/api/v1/users`, dan.api_key)).status === 401 ? true : undefined),
      1000,
      20,
    );
  });

  it('a key issued by the CLI, revoked by its owner with DELETE /api_keys/{id} on one instance, gets 401 on the other within one second', async () => {
    const made = await meridian(settings, ['users', 'add', 'erin', '--json']);
    expect(made.code).toBe(0);
    const erin = JSON.parse(made.stdout) as { api_key: string; key_id: string };
    issuedKeys.push(erin.api_key);
    await waitFor(
      'instance b to accept the CLI key',
      async () => ((await call(`${b.url}/api/v1/users`, erin.api_key)).status === 200 ? true : undefined),
      5000,
    );
    expect((await call(`${a.url}/api/v1/api_keys/${erin.key_id}`, erin.api_key, { method: 'DELETE' })).status).toBe(204);
    const started = Date.now();
    await waitFor('instance b to refuse it', async () => ((await call(`${b.url}/api/v1/users`, erin.api_key)).status === 401 ? true : undefined), 1000, 20);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("`npx meridian` runs on the project's Node when the shell's node is the machine's own (older) one", async () => {
    // PATH without the Node that `make` put first: the bin script must find the project's Node itself.
    const machinePath = (process.env.PATH ?? '')
      .split(':')
      .filter((d) => !d.includes('/.cache/meridian/'))
      .join(':');
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        'npx',
        ['--no-install', 'meridian', 'users', 'list', '--json'],
        { cwd: new URL('../../', import.meta.url).pathname, env: { PATH: machinePath, HOME: process.env.HOME ?? '', ...settingsEnv(settings) } },
        (error, stdout, stderr) => {
          resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
        },
      );
    });
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as Array<{ user_name: string }>).map((u) => u.user_name)).toContain('root');
  });

  it('no key, issued or refused, appears in the logs of a real api process, even at debug level', async () => {
    const port = 18392;
    const proc = startApp('api', settings, { MERIDIAN_API_PORT: String(port), LOG_LEVEL: 'debug' });
    try {
      const url = `http://127.0.0.1:${port}`;
      await waitFor(
        'the api process to be ready',
        async () => ((await fetch(`${url}/readyz`).catch(() => null))?.status === 200 ? true : undefined),
        60_000,
        250,
      );
      const made = await call(`${url}/api/v1/api_keys`, rootKey, { method: 'POST' });
      expect(made.status).toBe(201);
      const fresh = made.json.api_key as string;
      issuedKeys.push(fresh);
      expect((await call(`${url}/api/v1/users`, fresh)).status).toBe(200);
      const unknown = `mrd_0123456789abcdef_${'Z'.repeat(43)}`;
      expect((await call(`${url}/api/v1/users`, unknown)).status).toBe(401);
      await waitFor('the request log lines', () => ((proc.output().match(/"path":"\/api\/v1\/users"/g) ?? []).length >= 2 ? true : undefined), 5000);
      for (const key of [...issuedKeys, unknown]) expect(proc.output()).not.toContain(key.slice('mrd_0123456789abcdef_'.length));
    } finally {
      await proc.stop();
    }
  });
});
