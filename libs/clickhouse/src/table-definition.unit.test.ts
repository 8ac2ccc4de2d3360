import { describe, expect, it } from 'vitest';
import { settingNames, tableDefinition } from './table-definition.ts';

// As ClickHouse 26.9 writes system.tables' create_table_query of points after migrations 004, 009 (two columns) and 014.
const migrated =
  'CREATE TABLE d.points (`metric_name` String, `ts` Int64 CODEC(Delta(8), ZSTD(3)), `value` Float64, `updated_at` Int64, ' +
  '`task_id` String CODEC(ZSTD(3)) SETTINGS (min_compress_block_size = 4194304, max_compress_block_size = 4194304), `kafka_partition` UInt16, ' +
  '`kafka_offset` UInt64, `row_in_batch` UInt32) ENGINE = MergeTree PARTITION BY tuple() ORDER BY (metric_name, ts, updated_at) ' +
  'SETTINGS index_granularity = 8192, non_replicated_deduplication_window = 1000';

describe("a table's definition", () => {
  it('gives each column with its codec and its own settings, and the settings of the table', () => {
    const { columns, settings } = tableDefinition(migrated);
    expect([...columns.keys()]).toEqual(['metric_name', 'ts', 'value', 'updated_at', 'task_id', 'kafka_partition', 'kafka_offset', 'row_in_batch']);
    expect(columns.get('ts')).toEqual({ text: 'Int64 CODEC(Delta(8), ZSTD(3))', codec: true, settings: new Set() });
    expect(columns.get('task_id')!.codec).toBe(true);
    expect(columns.get('task_id')!.settings).toEqual(new Set(['min_compress_block_size', 'max_compress_block_size']));
    expect(columns.get('value')).toEqual({ text: 'Float64', codec: false, settings: new Set() });
    expect(settings).toEqual(new Set(['index_granularity', 'non_replicated_deduplication_window']));
  });

  it("is not misled by commas and parentheses in a type, a default's string or a quoted name", () => {
    const { columns, settings } = tableDefinition(
      "CREATE TABLE d.t (`a` Tuple(UInt8, String), `b` String DEFAULT 'x, (y', `c,d` UInt8, `e` Array(String) CODEC(ZSTD(1))) ENGINE = MergeTree ORDER BY tuple()",
    );
    // `c,d` is no name a migration writes (\w+): left out, and the columns after it are still found.
    expect([...columns.entries()].map(([name, c]) => [name, c.text, c.codec])).toEqual([
      ['a', 'Tuple(UInt8, String)', false],
      ['b', "String DEFAULT 'x, (y'", false],
      ['e', 'Array(String) CODEC(ZSTD(1))', true],
    ]);
    expect(settings).toEqual(new Set());
  });

  it('names the settings of a list', () => {
    expect(settingNames("a = 1, b_c = 'x', d=2")).toEqual(new Set(['a', 'b_c', 'd']));
    expect(settingNames('')).toEqual(new Set());
  });
});
