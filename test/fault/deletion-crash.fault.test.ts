import { describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { call } from '../support/api.ts';
import { startApp } from '../support/processes.ts';
import { faultWorld } from '../support/fault-setup.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

const METRICS = 4;
const POINTS = 5000;
const T = (s: number) => Date.UTC(2024, 0, 1) + s * 1000;

/**
 * A deletion is several statements (the points' mutation, the catalog's rows deleted and written
 * anew, each rollup's buckets deleted and written anew, the marker recorded): the ingest process is
 * killed with SIGKILL inside each step, and points are uploaded into the deleted range meanwhile.
 * After a last start, exactly the selected points are gone, the later ones kept, and the catalog
 * and the 1m and 1h rollups agree with the points, bucket for bucket.
 */
describe('ingest killed with SIGKILL during deletions', () => {
  const settings = isolatedSettings({ KAFKA_SESSION_TIMEOUT_MS: '6000', MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
  const world = faultWorld(settings);
  const query = async (sql: string) =>
    (await (await fetch(`${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}&query=${encodeURIComponent(sql)}`)).text()).trim();
  const mutationsOf = async (table: string) =>
    Number(await query(`SELECT count() FROM system.mutations WHERE database = '${settings.CLICKHOUSE_DATABASE}' AND table = '${table}'`));

  async function upload(metric: string, seconds: readonly number[], value: (s: number) => number): Promise<string> {
    const res = await call(`${world.api.url}/api/v1/metrics/upload`, world.key, {
      method: 'POST',
      body: { metric_name: metric, values: seconds.map((s) => ({ timestamp: formatTimestamp(T(s)), value: value(s) })) },
    });
    expect(res.status, res.text).toBe(202);
    return res.json.task_id as string;
  }
  async function deletion(metrics: string[], from: number, to: number): Promise<string> {
    const res = await call(`${world.api.url}/api/v1/metrics/delete`, world.key, {
      method: 'POST',
      body: { metrics, start_date: formatTimestamp(T(from)), end_date: formatTimestamp(T(to)), reason: 'fault test' },
    });
    expect(res.status, res.text).toBe(202);
    return res.json.task_id as string;
  }

  it('ends with exactly the selected points gone, later points kept, the catalog and the rollups equal to the points', async () => {
    const names = Array.from({ length: METRICS }, (_, m) => `dcrash_${m}`);
    const all = Array.from({ length: POINTS }, (_, s) => s);
    const tasks: string[] = [];
    for (const [m, name] of names.entries()) tasks.push(await upload(name, all, (s) => m * POINTS + s));
    world.processes.push(startApp('ingest', settings));
    for (const id of tasks) expect((await waitForTask(world.api.url, world.key, id, 120_000)).status).toBe('succeeded');

    // Each round: a deletion, a kill at one step of it, an upload into its range after it (kept), a restart.
    const rounds: Array<{ from: number; to: number; killAt: string }> = [
      { from: 1000, to: 1999, killAt: 'points' },
      { from: 2000, to: 2999, killAt: '.inner.metric_catalog' },
      { from: 3000, to: 3999, killAt: 'random' },
      { from: 4000, to: 4399, killAt: '.inner.points_1m' },
      { from: 4400, to: 4799, killAt: '.inner.points_1h' },
    ];
    const later: number[] = [];
    const deletions: string[] = [];
    for (const round of rounds) {
      const table = round.killAt === 'random' ? 'points' : round.killAt;
      const before = await mutationsOf(table);
      deletions.push(await deletion(names, round.from, round.to));
      if (round.killAt === 'random') await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 400)));
      else await waitFor(`a mutation of ${table}`, async () => ((await mutationsOf(table)) > before ? true : undefined), 60_000, 10);
      await world.processes.at(-1)!.stop('SIGKILL');
      // Accepted after the deletion: kept, in its range.
      const s = round.from + Math.floor((round.to - round.from) / 2);
      later.push(s);
      tasks.push(await upload(names[0]!, [s], () => -s));
      world.processes.push(startApp('ingest', settings));
      // The catalog lacks the metrics while their rows are written anew: the next round selects them once this one is done.
      expect((await waitForTask(world.api.url, world.key, deletions.at(-1)!, 180_000)).status).toBe('succeeded');
    }
    for (const id of [...deletions, ...tasks]) expect((await waitForTask(world.api.url, world.key, id, 180_000)).status).toBe('succeeded');

    const kept = (m: number) => POINTS - 3800 + (m === 0 ? later.length : 0);
    expect(await query('SELECT metric_name, count() FROM points GROUP BY metric_name ORDER BY metric_name FORMAT TabSeparated')).toBe(
      names.map((n, m) => `${n}\t${kept(m)}`).join('\n'),
    );
    expect(Number(await query('SELECT count() FROM points WHERE ts >= ' + T(1000) + ' AND ts <= ' + T(4799) + ' AND value >= 0'))).toBe(0);
    expect(await query(`SELECT arraySort(groupArray(value)) FROM points WHERE metric_name = 'dcrash_0' AND value < 0`)).toBe(
      `[${later
        .map((s) => -s)
        .sort((a, b) => a - b)
        .join(',')}]`,
    );
    // The catalog counts what points holds, with the same first and last.
    const catalog = await query(
      'SELECT metric_name, countMerge(points), minMerge(first_ts), maxMerge(last_ts) FROM metric_catalog GROUP BY metric_name ORDER BY metric_name FORMAT TabSeparated',
    );
    expect(catalog).toBe(
      await query('SELECT metric_name, count(), min(ts), max(ts) FROM points GROUP BY metric_name ORDER BY metric_name FORMAT TabSeparated'),
    );
    // Each rollup holds the states of exactly the points that remain, per bucket (no timestamp was stored twice).
    for (const [table, step] of [
      ['points_1m', 60_000],
      ['points_1h', 3_600_000],
    ] as const) {
      const rollup = await query(
        `SELECT metric_name, bucket, countMerge(rows), uniqExactMerge(timestamps), minMerge(min_value), maxMerge(max_value), sumMerge(sum_value) FROM ${table} GROUP BY metric_name, bucket ORDER BY metric_name, bucket FORMAT TabSeparated`,
      );
      const points = await query(
        `SELECT metric_name, intDiv(ts, ${step}) * ${step} AS bucket, count(), uniqExact(ts), min(value), max(value), sum(value) FROM points GROUP BY metric_name, bucket ORDER BY metric_name, bucket FORMAT TabSeparated`,
      );
      expect(rollup, table).toBe(points);
    }
    // Each marker is recorded once per partition whatever the kills: the position never moved back.
    expect(Number(await query(`SELECT count() FROM points_seals WHERE attempt = ''`))).toBeGreaterThanOrEqual(rounds.length);
  }, 600_000);
});
