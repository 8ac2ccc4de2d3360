import Koa from 'koa';
import Router from '@koa/router';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initialTasks, type Task } from '@meridian/domain';
import { serve, type Served } from '../../../../test/support/http.ts';
import { waitFor } from '../../../../test/support/wait.ts';
import { createApiMetrics, type ApiMetrics } from './metrics.ts';

const tasks = initialTasks();
let finished = { succeeded: 0, failed: 0, points: 0 };
const task = (id: string, status: Task['status'], points: number | null): Task => ({
  task_id: id,
  kind: 'metrics_upload',
  user_name: 'ada',
  status,
  created_at: 0,
  updated_at: 0,
  rows_done: 0,
  rows_total: null,
  result: points === null ? null : { points_accepted: points, rows_rejected: 0, metrics: [] },
  errors: [],
  reason: null,
  pending_partitions: [],
  open_runs: 0,
  idempotency_key: null,
  payload_sha256: '',
});
let metrics: ApiMetrics;
let served: Served;

beforeAll(async () => {
  metrics = createApiMetrics({ tasks: () => tasks, finishedTasks: () => finished, processMetrics: false });
  const app = new Koa();
  const router = new Router();
  router.get('/api/v1/tasks/:task_id', (ctx) => {
    ctx.body = { id: ctx.params.task_id };
  });
  app.use(metrics.observeRequests);
  app.use(router.routes()).use(router.allowedMethods());
  served = await serve(app);
});
afterAll(() => served.close());

const scrape = () => metrics.registry.metrics();

describe('api metrics', () => {
  it('counts and times requests by route template and status, never by raw path', async () => {
    await fetch(`${served.url}/api/v1/tasks/a`);
    await fetch(`${served.url}/api/v1/tasks/b`);
    await fetch(`${served.url}/nowhere/${Math.random()}`);
    await fetch(`${served.url}/api/v1/tasks/c`, { method: 'DELETE' });
    // A request is recorded once its response has been sent in full ('close'), a moment after the client has it.
    const text = await waitFor(
      'four requests recorded',
      async () => {
        const t = await scrape();
        return t.includes('status="405"} 1') ? t : undefined;
      },
      2000,
      10,
    );
    expect(text).toContain('meridian_http_requests_total{method="GET",route="/api/v1/tasks/{task_id}",status="200"} 2');
    expect(text).toContain('meridian_http_requests_total{method="GET",route="(unmatched)",status="404"} 1');
    expect(text).toContain('meridian_http_requests_total{method="DELETE",route="(unmatched)",status="405"} 1');
    expect(text).toMatch(/meridian_http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/tasks\/\{task_id\}",status="200"\} 2/);
    expect(text).not.toMatch(/tasks\/a|nowhere/);
  });

  it('counts accepted uploads, their bytes and JSON values', async () => {
    metrics.uploadAccepted('json_body', 120, 3);
    metrics.uploadAccepted('file', 5000);
    const text = await scrape();
    expect(text).toContain('meridian_uploads_accepted_total{source="json_body"} 1');
    expect(text).toContain('meridian_uploads_accepted_total{source="file"} 1');
    expect(text).toContain('meridian_upload_bytes_accepted_total{source="file"} 5000');
    expect(text).toContain('meridian_upload_points_accepted_total 3');
  });

  it('reads unfinished task counts from the live fold and finished ones from the tally at each scrape', async () => {
    expect(await scrape()).toContain('meridian_tasks{status="succeeded"} 0');
    tasks.set('1', task('1', 'succeeded', 10)); // finished: counted by the tally, not again here
    tasks.set('3', task('3', 'running', null));
    finished = { succeeded: 2, failed: 1, points: 15 };
    const text = await scrape();
    expect(text).toContain('meridian_tasks{status="queued"} 0');
    expect(text).toContain('meridian_tasks{status="running"} 1');
    expect(text).toContain('meridian_tasks{status="succeeded"} 2');
    expect(text).toContain('meridian_tasks{status="failed"} 1');
    expect(text).toContain('meridian_points_ingested_total 15');
    expect(await scrape()).toContain('meridian_points_ingested_total 15'); // not added up twice
  });
});

describe('projection freshness', () => {
  it('is the age of the oldest parsed upload still waiting for its points to be queryable', async () => {
    const state = initialTasks();
    const waiting = (id: string, createdAt: number): Task => ({ ...task(id, 'running', 10), created_at: createdAt });
    const m = createApiMetrics({ tasks: () => state, processMetrics: false, now: () => 9_000 });
    const pending = async () => Number(/^meridian_projection_pending_seconds (\S+)$/m.exec(await m.registry.metrics())?.[1]);
    expect(await pending()).toBe(0);
    state.set('a', waiting('a', 4_000));
    state.set('b', waiting('b', 6_000));
    state.set('c', { ...task('c', 'running', null), created_at: 1_000 }); // still parsing: not waiting on projection
    expect(await pending()).toBe(5);
    state.set('a', { ...waiting('a', 4_000), status: 'succeeded' });
    expect(await pending()).toBe(3);
  });

  it('shows the events each fold read at start, once it has caught up', async () => {
    let files: number | null = null;
    const m = createApiMetrics({
      processMetrics: false,
      folds: () => [
        { fold: 'accounts', eventsReadAtStart: 12 },
        { fold: 'files', eventsReadAtStart: files },
      ],
    });
    const text = await m.registry.metrics();
    expect(text).toMatch(/^meridian_fold_start_events_read\{fold="accounts"\} 12$/m);
    expect(text).not.toContain('fold="files"');
    files = 0;
    expect(await m.registry.metrics()).toMatch(/^meridian_fold_start_events_read\{fold="files"\} 0$/m);
  });

  it("shows the points archive's lag per partition from one read a scrape, and nothing before a pass has ended", async () => {
    let reads = 0;
    let lag: Array<{ topic: string; partition: number; offsets: number; oldestUnarchivedAgeMs: number }> = [];
    let clock = 0;
    const m = createApiMetrics({
      processMetrics: false,
      now: () => clock,
      archiveLag: () => {
        reads++;
        return Promise.resolve(lag);
      },
    });
    expect(await m.registry.metrics()).not.toMatch(/^meridian_archive_lag_offsets\{/m);
    clock += 1000;
    lag = [
      { topic: 'p.points', partition: 0, offsets: 0, oldestUnarchivedAgeMs: 0 },
      { topic: 'p.points', partition: 1, offsets: 42, oldestUnarchivedAgeMs: 90_500 },
    ];
    const before = reads;
    const text = await m.registry.metrics();
    expect(reads - before).toBe(1);
    expect(text).toMatch(/^meridian_archive_lag_offsets\{topic="p.points",partition="0"\} 0$/m);
    expect(text).toMatch(/^meridian_archive_lag_offsets\{topic="p.points",partition="1"\} 42$/m);
    expect(text).toMatch(/^meridian_archive_oldest_unarchived_seconds\{topic="p.points",partition="0"\} 0$/m);
    expect(text).toMatch(/^meridian_archive_oldest_unarchived_seconds\{topic="p.points",partition="1"\} 90.5$/m);
    // A gauge collected alone shares that read; the next scrape, a second later, reads again.
    expect(await m.registry.getSingleMetricAsString('meridian_archive_lag_offsets')).toMatch(/partition="1"\} 42$/m);
    expect(reads - before).toBe(1);
    clock += 1000;
    lag = [{ topic: 'p.points', partition: 1, offsets: 7, oldestUnarchivedAgeMs: 1000 }];
    expect(await m.registry.metrics()).toMatch(/^meridian_archive_lag_offsets\{topic="p.points",partition="1"\} 7$/m);
  });
});
