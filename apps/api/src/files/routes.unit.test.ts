import Koa from 'koa';
import Router from '@koa/router';
import { koaBody } from 'koa-body';
import { describe, expect, it } from 'vitest';
import { applyFileEvent, DomainError, foldFiles, initialTasks, type FileDefined, type FileEvent, type FileReadModel, type UserRecord } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { inject, type Listener } from '../../../../test/support/inject.ts';
import { listFiles, usageOf } from '../../../../test/support/files-reference.ts';
import { problemMiddleware } from '../http/problem.ts';
import { requestContext } from '../http/request-context.ts';
import { mountRoutes } from '../http/route.ts';
import { FileCatalog } from './catalog.ts';
import { deleteFileRoute, describeFileRoute, getFileRoute } from './entry-routes.ts';
import { shareFileRoute, unshareFileRoute } from './grant-routes.ts';
import { listFilesRoute } from './list-route.ts';

/**
 * The file routes that need nothing but the catalog, run through Koa's callback with no port:
 * the catalog (FileCatalog) over a read model that is the pure fold (foldFiles, applyFileEvent,
 * listFiles) in memory, and a log whose appends it folds at once.
 */
const logger = createLogger({ name: 'test', level: 'silent' });
const person = (user_name: string, is_admin = false): UserRecord => ({
  user_name,
  is_admin,
  created_at: 0,
  disabled_at: null,
  key_ids: [],
  entitlements: [],
  file_quota_bytes: null,
});
const users = new Map(['ada', 'bob', 'cy'].map((name) => [name, person(name)]));

const ADA_FILE = '0d7c3e2a-5b6f-4e1d-8c9a-1f2e3d4c5b6a';
const UNKNOWN = '7e1d2c3b-4a59-4687-9a0b-1c2d3e4f5a6b';
const defined = (file_id: string, user_name: string): FileDefined => ({
  type: 'FileDefined',
  file_id,
  task_id: file_id,
  user_name,
  at: Date.UTC(2024, 0, 2),
  file_name: `${user_name}.csv`,
  description: '',
  content_type: 'text/csv',
  size: 3,
  sha256: Buffer.alloc(32, 1),
  blob_key: `blobs/${file_id}`,
});

function catalog(events: FileEvent[]) {
  const state = foldFiles(events);
  let offset = events.length - 1;
  const calls = { endsRead: 0 };
  const readModel: FileReadModel = {
    get: async (fileId) => state.files.get(fileId),
    // Deleted ids are left out: to a route they are unknown, as to the read model's get.
    rows: async (fileIds) => fileIds.flatMap((id) => (state.files.has(id) ? [{ file: state.files.get(id)!, deleted: false, partition: 0, offset }] : [])),
    list: async (caller, query) => listFiles(state, caller, query),
    usage: async (owners) => new Map([...usageOf(state)].filter(([owner]) => owners.includes(owner))),
    positions: async () => new Map([[0, offset]]),
    nextSeq: async () => state.defined,
  };
  const files = new FileCatalog({
    readModel,
    logEnds: async () => {
      calls.endsRead++;
      return new Map([[0, offset + 1]]);
    },
    append: async (_fileId, appended) => {
      for (const event of appended) {
        applyFileEvent(state, event);
        offset++;
      }
      return appended.length === 0 ? null : { partition: 0, offset };
    },
    ackTimeoutMs: 1000,
    waitMs: 1000,
    logger,
  });
  return { files, calls, state };
}

function appOf(files: FileCatalog): Listener {
  const app = new Koa();
  app.silent = true;
  app.use(requestContext(logger));
  app.use(problemMiddleware(logger));
  const router = new Router();
  const authenticate = (ctx: Koa.Context): UserRecord => {
    const user = users.get(ctx.get('X-Test-User'));
    if (!user) throw new DomainError('unauthenticated', 'no such test user');
    return user;
  };
  const jsonBody = koaBody({ json: true, jsonStrict: true, jsonLimit: 64 * 1024, urlencoded: false, text: false, multipart: false });
  const routes = [
    listFilesRoute({ files, tasks: initialTasks }),
    getFileRoute(files),
    describeFileRoute(files),
    deleteFileRoute(files),
    shareFileRoute(files, 2),
    unshareFileRoute(files),
  ];
  mountRoutes(router, routes, authenticate, jsonBody);
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app.callback();
}

function client(app: Listener) {
  const call = (user: string, method: string, url: string, body?: unknown) =>
    inject(app, {
      method,
      url,
      headers: { 'x-test-user': user, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
  return {
    get: (user: string, url: string) => call(user, 'GET', url),
    patch: (user: string, url: string, body: unknown) => call(user, 'PATCH', url, body),
    put: (user: string, url: string, body: unknown) => call(user, 'PUT', url, body),
    del: (user: string, url: string) => call(user, 'DELETE', url),
  };
}

const problemOf = (r: { json(): any }) => {
  const { type, title, status, detail } = r.json();
  return { type, title, status, detail };
};

describe("file routes through Koa's callback (no port, the catalog in memory)", () => {
  it('a file the caller may not see is the same 404 as an unknown id and a malformed one, for every route', async () => {
    const { files, state } = catalog([defined(ADA_FILE, 'ada')]);
    const api = client(appOf(files));
    const hidden = await api.get('bob', `/api/v1/files/${ADA_FILE}`);
    const unknown = await api.get('bob', `/api/v1/files/${UNKNOWN}`);
    const malformed = await api.get('bob', '/api/v1/files/not-a-uuid');
    expect([hidden.status, unknown.status, malformed.status]).toEqual([404, 404, 404]);
    expect(hidden.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(problemOf(unknown)).toEqual(problemOf(hidden));
    expect(problemOf(malformed)).toEqual(problemOf(hidden));
    // Changing it is refused the same way: never a 403 that would confirm the file exists.
    expect((await api.patch('bob', `/api/v1/files/${ADA_FILE}`, { file_description: 'x' })).status).toBe(404);
    expect((await api.del('bob', `/api/v1/files/${ADA_FILE}`)).status).toBe(404);
    expect((await api.put('bob', `/api/v1/files/${ADA_FILE}/entitlements/cy`, { access: 'r' })).status).toBe(404);
    expect(state.files.get(ADA_FILE)?.grants.size).toBe(0);
    expect((await api.get('ada', `/api/v1/files/${ADA_FILE}`)).status).toBe(200);
  });

  it("an id the read model does not show waits once for the projection to reach the files log's end before answering; a malformed one does not", async () => {
    const { files, calls } = catalog([]);
    const api = client(appOf(files));
    await api.get('ada', `/api/v1/files/${UNKNOWN}`);
    expect(calls.endsRead).toBe(1);
    await api.get('ada', '/api/v1/files/not-a-uuid');
    expect(calls.endsRead).toBe(1);
  });

  it('a reader reads; an rw grantee also describes; only the owner shares and deletes, and sees the grants', async () => {
    const { files } = catalog([defined(ADA_FILE, 'ada')]);
    const api = client(appOf(files));
    const url = `/api/v1/files/${ADA_FILE}`;
    expect((await api.put('ada', `${url}/entitlements/bob`, { access: 'r' })).json().shared_with).toEqual([{ user_name: 'bob', access: 'r' }]);
    const asReader = await api.get('bob', url);
    expect(asReader.status).toBe(200);
    expect(asReader.json()).toMatchObject({ entitlement: 'r', user_name: 'ada' });
    expect(asReader.json().shared_with).toBeUndefined();
    expect((await api.patch('bob', url, { file_description: 'mine now' })).status).toBe(403);

    await api.put('ada', `${url}/entitlements/bob`, { access: 'rw' });
    const described = await api.patch('bob', url, { file_description: 'daily export' });
    expect(described.status).toBe(200);
    expect(described.json()).toMatchObject({ entitlement: 'rw', file_description: 'daily export' });
    expect((await api.put('bob', `${url}/entitlements/cy`, { access: 'r' })).status).toBe(403);
    expect((await api.del('bob', url)).status).toBe(403);

    expect((await api.del('ada', `${url}/entitlements/bob`)).status).toBe(204);
    expect((await api.get('bob', url)).status).toBe(404);
    expect((await api.del('ada', url)).status).toBe(204);
    expect((await api.get('ada', url)).status).toBe(404);
  });

  it("the list holds the caller's own files and those shared with them, nothing else", async () => {
    const bobs = '1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9';
    const { files } = catalog([defined(ADA_FILE, 'ada'), defined(bobs, 'bob')]);
    const api = client(appOf(files));
    const ids = async (user: string) => ((await api.get(user, '/api/v1/files')).json().files_list as Array<{ file_id: string }>).map((f) => f.file_id);
    expect(await ids('ada')).toEqual([ADA_FILE]);
    expect(await ids('cy')).toEqual([]);
    await api.put('bob', `/api/v1/files/${bobs}/entitlements/ada`, { access: 'r' });
    expect(new Set(await ids('ada'))).toEqual(new Set([ADA_FILE, bobs]));
  });

  it('bad input is a 400 problem and a grant past the cap a 409, never a 500', async () => {
    const { files } = catalog([defined(ADA_FILE, 'ada')]);
    const api = client(appOf(files));
    const url = `/api/v1/files/${ADA_FILE}`;
    const cases = [
      await api.put('ada', `${url}/entitlements/${encodeURIComponent('no spaces!')}`, { access: 'r' }),
      await api.put('ada', `${url}/entitlements/bob`, { access: 'x' }),
      await api.patch('ada', url, '{"file_description": '),
      await api.patch('ada', url, { file_description: 'x'.repeat(10_001) }),
      await api.get('ada', '/api/v1/files?limit=0'),
    ];
    for (const r of cases) {
      expect(r.status).toBe(400);
      expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    await api.put('ada', `${url}/entitlements/bob`, { access: 'r' });
    await api.put('ada', `${url}/entitlements/cy`, { access: 'r' });
    const third = await api.put('ada', `${url}/entitlements/dan`, { access: 'r' });
    expect(third.status).toBe(409);
    expect(third.json().type).toMatch(/limit-reached$/);
    // Granting again replaces the access: no new grant, so no cap.
    expect((await api.put('ada', `${url}/entitlements/bob`, { access: 'rw' })).status).toBe(200);
  });
});
