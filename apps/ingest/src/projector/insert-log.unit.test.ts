import { describe, expect, it } from 'vitest';
import type { Logger } from '@meridian/observability';
import { InsertLog } from './insert-log.ts';

describe('insert log', () => {
  it('logs at most once per interval, with the totals since the last line', () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = { info: (o: Record<string, unknown>) => lines.push(o) } as unknown as Logger;
    let now = 10_000;
    const log = new InsertLog(logger, 1000, () => now);
    log.record(100, 10); // first insert: logged
    now += 300;
    log.record(200, 20);
    now += 300;
    log.record(300, 30);
    expect(lines).toHaveLength(1);
    now += 500;
    log.record(400, 40);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ inserts: 3, rows: 900, insert_ms: 90, rows_per_s: 10_000 });
  });
});
