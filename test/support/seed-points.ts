import type { Settings } from '@meridian/config';
import { clickhouse } from './clickhouse.ts';

/**
 * Writes `count` points of one metric straight into the run's points table, shaped as the
 * projector writes them (as test/hostile seeds do): point i at fromMs + i × stepMs, its value
 * the ClickHouse expression `value` of `number` (= i). On a points partition no consumer has
 * (65535), so no projector resume position moves. The metric catalog (a view on points) counts
 * them with the same insert. Test-made names and expressions only.
 */
export async function seedPoints(settings: Settings, seed: { metric: string; count: number; fromMs: number; stepMs: number; value: string }): Promise<void> {
  if (!/^[a-z0-9._-]+$/.test(seed.metric)) throw new Error(`a test metric name, not ${seed.metric}`);
  for (const n of [seed.count, seed.fromMs, seed.stepMs]) if (!Number.isSafeInteger(n)) throw new Error(`not a safe integer: ${n}`);
  await clickhouse(
    settings,
    `INSERT INTO points SELECT '${seed.metric}', ${seed.fromMs} + number * ${seed.stepMs}, toFloat64(${seed.value}), ${seed.fromMs}, 'test-seed', 65535, 0, toUInt32(number) FROM numbers(${seed.count})`,
  );
}
