import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext } from 'playwright-core';
import { offlineChromium } from '../support/chromium.ts';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';

/**
 * A file named with a quote, accents and a symbol, uploaded the way people do: Python
 * requests, curl -F and a browser's FormData (Debian's chromium driven by playwright-core, as
 * the /docs test does). Each is listed and downloaded under exactly that name. The three
 * clients escape `"` in the part's filename as `%22` (WHATWG) and send the rest as raw UTF-8.
 */
const NAME = 'rapport "été" ✓.csv';
const CONTENT = 'metric,value\ncpu,0.5\n';
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
// Python with requests: the virtualenv deploy/local/install.sh test-tools makes for schemathesis
// (requests is one of its dependencies), so the test needs nothing from the machine's Python.
const python = `${execFileSync('bash', ['-c', 'source deploy/local/lib.sh && printf %s "$SCHEMATHESIS_HOME"'], { cwd: repoRoot, encoding: 'utf8' })}/bin/python`;
const run = promisify(execFile);

const settings = isolatedSettings();
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let key: string;
let dir: string;
let context: BrowserContext;

type Accepted = { task_id: string; file_id: string };

async function stored(accepted: Accepted): Promise<string> {
  const task = await waitForTask(api.url, key, accepted.task_id);
  expect(task.status, `${task.reason}`).toBe('succeeded');
  return accepted.file_id;
}

/** RFC 6266 / RFC 8187: the name a client reads from Content-Disposition (filename* first). */
function nameOf(disposition: string): string {
  const ext = /filename\*=UTF-8''([^;\s]+)/i.exec(disposition);
  if (ext) return decodeURIComponent(ext[1]!);
  return /filename="([^"]*)"/.exec(disposition)?.[1] ?? '';
}

beforeAll(async () => {
  if (!existsSync(python)) throw new Error(`${python} is missing: run deploy/local/install.sh test-tools (make test does)`);
  api = await startApi(settings);
  ingest = await startWorker(settings);
  const admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  key = await createUser(api.url, admin, 'namer', []);
  dir = await mkdtemp(join(tmpdir(), 'meridian-names-'));
  await writeFile(join(dir, 'upload.csv'), CONTENT);
  const profile = join(dir, 'chromium');
  context = await offlineChromium(profile, { acceptDownloads: true });
}, 120_000);
afterAll(async () => {
  await context?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  await ingest?.close();
  await api?.close();
});

const fileIds: Record<string, string> = {};

describe('UTF-8 file names', () => {
  it('Python requests', async () => {
    const script = [
      'import json, sys, requests',
      'url, key, path, name = sys.argv[1:5]',
      'with open(path, "rb") as f:',
      '    r = requests.post(url + "/api/v1/file/new", headers={"Authorization": "Bearer " + key}, files={"file": (name, f, "text/csv")})',
      'print(json.dumps({"status": r.status_code, "body": r.json()}))',
    ].join('\n');
    const { stdout } = await run(python, ['-c', script, api.url, key, join(dir, 'upload.csv'), NAME], {
      env: { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8' },
    });
    const res = JSON.parse(stdout) as { status: number; body: Accepted };
    expect(res.status, stdout).toBe(202);
    fileIds.requests = await stored(res.body);
  });

  it('curl -F with filename=', async () => {
    const quoted = `"${NAME.replace(/(["\\])/g, '\\$1')}"`; // curl -F's own quoting of a parameter value
    const { stdout } = await run('curl', [
      '-sS',
      '-H',
      `Authorization: Bearer ${key}`,
      '-F',
      `file=@${join(dir, 'upload.csv')};type=text/csv;filename=${quoted}`,
      `${api.url}/api/v1/file/new`,
    ]);
    fileIds.curl = await stored(JSON.parse(stdout) as Accepted);
  });

  it("a browser's FormData", async () => {
    const page = await context.newPage();
    await page.goto(`${api.url}/healthz`); // the api's own origin: the upload is same-origin
    const res = await page.evaluate<{ status: number; body: Accepted }>(`(async () => {
      const form = new FormData();
      form.append('file', new File([${JSON.stringify(CONTENT)}], ${JSON.stringify(NAME)}, { type: 'text/csv' }));
      const r = await fetch('/api/v1/file/new', { method: 'POST', headers: { Authorization: 'Bearer ${key}' }, body: form });
      return { status: r.status, body: await r.json() };
    })()`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    fileIds.browser = await stored(res.body);
    await page.close();
  });

  it("lists each under exactly that name and serves it with filename*=UTF-8'' and an ASCII fallback", async () => {
    const list = await call(`${api.url}/api/v1/files`, key);
    const names = new Map((list.json.files_list as Array<{ file_id: string; file_name: string }>).map((f) => [f.file_id, f.file_name]));
    for (const [client, id] of Object.entries(fileIds)) {
      expect(names.get(id), client).toBe(NAME);
      const res = await fetch(`${api.url}/api/v1/file/download/${id}`, { headers: { Authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(CONTENT);
      const disposition = res.headers.get('content-disposition')!;
      expect(disposition).toBe(`attachment; filename="rapport _ete_ _.csv"; filename*=UTF-8''rapport%20%22%C3%A9t%C3%A9%22%20%E2%9C%93.csv`);
      expect(nameOf(disposition)).toBe(NAME);
    }
    expect(Object.keys(fileIds).sort()).toEqual(['browser', 'curl', 'requests']);
  });

  it('a browser saves the download under that name, read from filename*', async () => {
    // A navigation carries the extra header (a download started by <a download> would not).
    await context.setExtraHTTPHeaders({ Authorization: `Bearer ${key}` });
    const page = await context.newPage();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.goto(`${api.url}/api/v1/file/download/${fileIds.browser}`).catch((e: Error) => expect(e.message).toMatch(/Download is starting/)),
    ]);
    expect(await readFile(await download.path(), 'utf8')).toBe(CONTENT);
    // Chromium keeps the accents and ✓ of filename* (the ASCII fallback would give
    // "rapport _ete_ _.csv") and replaces only `"`, which it never puts in a file's name.
    expect(download.suggestedFilename()).toBe(NAME.replaceAll('"', '_'));
    await page.close();
  });
});
