import { describe, expect, it } from 'vitest';
import { deleteRowsSql, deletionWhere, hexString } from './delete.ts';

describe("a deletion's SQL", () => {
  it('carries metric names as hex digits only, whatever they hold', () => {
    const evil = "x') OR 1=1 --\\'";
    expect(hexString(evil)).toMatch(/^unhex\('[0-9a-f]+'\)$/);
    expect(Buffer.from(/'([0-9a-f]+)'/.exec(hexString(evil))![1]!, 'hex').toString('utf8')).toBe(evil);
    const where = deletionWhere({ taskId: 't', partition: 3, offset: 42, metrics: [evil, 'cpu{a="b"}'], fromMs: 10, toMs: 20 });
    expect(where).not.toContain('OR 1=1');
    expect(where).toBe(
      `metric_name IN (${hexString(evil)}, ${hexString('cpu{a="b"}')}) AND ts >= 10 AND ts <= 20 AND kafka_partition = 3 AND kafka_offset < 42`,
    );
  });

  it('is a mutation on 18.16 and a lightweight DELETE where the server has it; only our table names', () => {
    expect(deleteRowsSql('points', 'ts < 1', { lightweightDelete: false })).toBe('ALTER TABLE `points` DELETE WHERE ts < 1');
    expect(deleteRowsSql('.inner.metric_catalog', 'ts < 1', { lightweightDelete: true })).toBe('DELETE FROM `.inner.metric_catalog` WHERE ts < 1');
    expect(() => deleteRowsSql('points; DROP TABLE x', 'ts < 1', { lightweightDelete: false })).toThrow(/not a table/);
    expect(() => deletionWhere({ taskId: 't', partition: 0, offset: 1, metrics: ['m'], fromMs: 0.5, toMs: 1 })).toThrow();
  });
});
