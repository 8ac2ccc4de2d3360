import { describe, expect, it } from 'vitest';
import { pointBatch } from '../../../../test/support/point-batch.ts';
import type { PointBatch } from '@meridian/domain';
import type { Segment } from '@meridian/projection';
import {
  BlockBuffer,
  encodePointsBlock,
  INSERT_POINTS_SQL,
  insertPointsSql,
  insertToken,
  POINT_COLUMNS,
  STAGE_BLOCK_COLUMNS,
  type PointRow,
} from './native-block.ts';

/** A reader of the Native block, as ClickHouse reads it, written independently of the encoder. */
function decodeBlock(buf: Buffer): { columns: Array<[string, string]>; rows: PointRow[] } {
  let pos = 0;
  const varint = () => {
    let n = 0;
    let mul = 1;
    for (;;) {
      const b = buf[pos++]!;
      n += (b & 0x7f) * mul;
      if (b < 0x80) return n;
      mul *= 128;
    }
  };
  const str = () => {
    const len = varint();
    const s = buf.toString('utf8', pos, pos + len);
    pos += len;
    return s;
  };
  const ncols = varint();
  const nrows = varint();
  const columns: Array<[string, string]> = [];
  const data: Record<string, unknown[]> = {};
  for (let c = 0; c < ncols; c++) {
    const name = str();
    const type = str();
    columns.push([name, type]);
    const values: unknown[] = [];
    for (let r = 0; r < nrows; r++) {
      switch (type) {
        case 'String':
          values.push(str());
          break;
        case 'Int64':
          values.push(Number(buf.readBigInt64LE(pos)));
          pos += 8;
          break;
        case 'UInt64':
          values.push(Number(buf.readBigUInt64LE(pos)));
          pos += 8;
          break;
        case 'Float64':
          values.push(buf.readDoubleLE(pos));
          pos += 8;
          break;
        case 'UInt32':
          values.push(buf.readUInt32LE(pos));
          pos += 4;
          break;
        case 'UInt16':
          values.push(buf.readUInt16LE(pos));
          pos += 2;
          break;
        default:
          throw new Error(`unexpected type ${type}`);
      }
    }
    data[name] = values;
  }
  expect(pos).toBe(buf.length);
  const rows = Array.from({ length: nrows }, (_, r) => Object.fromEntries(columns.map(([name]) => [name, data[name]![r]])) as PointRow);
  return { columns, rows };
}

const batch = pointBatch;

/** The rows a segment list must become, written the obvious way. */
function expectedRows(segments: readonly Segment[]): PointRow[] {
  return segments.flatMap((s) =>
    s.batch.timestamps.map((ts, i) => ({
      metric_name: s.batch.names !== undefined && s.batch.names.length > 0 ? s.batch.names[s.batch.name_index![i]!]! : s.batch.metric_name,
      ts,
      value: s.batch.values[i]!,
      updated_at: s.batch.updated_at,
      task_id: s.batch.task_id,
      kafka_partition: s.partition,
      kafka_offset: s.offset,
      row_in_batch: i,
    })),
  );
}

describe('points rows as one Native block', () => {
  it('holds every point of every segment, with its partition, offset and row number', () => {
    const segments: Segment[] = [
      {
        batch: batch('task-1', 'cpu:load', 1_700_000_000_123, [
          [1_700_000_000_000, 0.5],
          [1_700_000_060_000, -1.25],
          [1_700_000_060_000, -1.25],
        ]),
        partition: 2,
        offset: 41,
      },
      {
        batch: batch('task-2', 'température "intérieure" \\ 東京 😀', 1_700_000_000_999, [
          [-86_400_000, 1e-300],
          [0, -0],
          [8_640_000_000_000_000, 1.7976931348623157e308],
        ]),
        partition: 65535,
        offset: 2 ** 53 - 1,
      },
      { batch: batch('task-3', 'empty', 5, []), partition: 0, offset: 7 },
      {
        batch: batch('t', 'x\ty\nz', -1, [
          [-1, Number.MIN_VALUE],
          [-(2 ** 53) + 1, 0.1 + 0.2],
        ]),
        partition: 1,
        offset: 0,
      },
    ];
    const { columns, rows } = decodeBlock(encodePointsBlock(segments));
    expect(columns).toEqual(POINT_COLUMNS.map(([n, t]) => [n, t]));
    expect(rows).toEqual(expectedRows(segments));
    expect(Object.is(rows[4]!.value, -0)).toBe(true);
  });

  it('keeps duplicate timestamps and values of one upload as separate rows', () => {
    const segments: Segment[] = [
      {
        batch: batch('dup', 'm', 1, [
          [10, 1],
          [10, 1],
          [10, 1],
        ]),
        partition: 0,
        offset: 3,
      },
    ];
    const { rows } = decodeBlock(encodePointsBlock(segments));
    expect(rows.map((r) => [r.ts, r.value, r.row_in_batch])).toEqual([
      [10, 1, 0],
      [10, 1, 1],
      [10, 1, 2],
    ]);
  });

  it('encodes large segments exactly (the repeated columns are filled by doubling copies)', () => {
    const n = 10_007;
    const points = Array.from({ length: n }, (_, i): [number, number] => [1_600_000_000_000 + i * 1000 - (i % 3), Math.sin(i) * 1e6]);
    const segments: Segment[] = [
      { batch: batch('big-task', 'big.metric', 1_700_000_000_000, points), partition: 1, offset: 123_456 },
      { batch: batch('small', 's', 2, [[1, 2]]), partition: 0, offset: 9 },
    ];
    const { rows } = decodeBlock(encodePointsBlock(segments));
    expect(rows).toEqual(expectedRows(segments));
  });

  it('names each point of a batch of several metrics by its index, beside batches of one', () => {
    const several: PointBatch = {
      ...batch('task-m', '', 7, [
        [1, 1],
        [1, 2],
        [2, 3],
        [2, 4],
        [3, 5],
      ]),
      names: ['cpu{host="a"}', 'mem', 'é'],
      name_index: [0, 1, 2, 0, 1],
    };
    const segments: Segment[] = [
      { batch: batch('task-1', 'one', 1, [[5, 5]]), partition: 0, offset: 3 },
      { batch: several, partition: 0, offset: 4 },
      {
        batch: batch('task-2', 'two', 2, [
          [6, 6],
          [7, 7],
        ]),
        partition: 0,
        offset: 5,
      },
    ];
    const { rows } = decodeBlock(encodePointsBlock(segments));
    expect(rows).toEqual(expectedRows(segments));
    expect(rows.map((r) => r.metric_name)).toEqual(['one', 'cpu{host="a"}', 'mem', 'é', 'cpu{host="a"}', 'mem', 'two', 'two']);
    // A stage's block leaves the names out entirely, as it does task and partition.
    const staged = decodeBlock(
      encodePointsBlock(
        segments,
        undefined,
        STAGE_BLOCK_COLUMNS.filter((c) => c !== 'metric_name'),
      ),
    );
    expect(staged.rows.map((r) => r.ts)).toEqual([5, 1, 1, 2, 2, 3, 6, 7]);
  });

  it('encodes no segments as an empty block', () => {
    const { rows } = decodeBlock(encodePointsBlock([]));
    expect(rows).toEqual([]);
  });

  it('names the columns in the INSERT in block order', () => {
    expect(INSERT_POINTS_SQL).toBe(
      'INSERT INTO points (metric_name, ts, value, updated_at, task_id, kafka_partition, kafka_offset, row_in_batch) FORMAT Native',
    );
  });

  it("leaves a stage's task and partition out of its blocks and of its INSERT, and keeps every other column exact", () => {
    const segments: Segment[] = [
      {
        batch: batch('task-1', 'cpu:load', 7, [
          [1_700_000_000_000, 0.5],
          [1_700_000_060_000, -1.25],
        ]),
        partition: 2,
        offset: 41,
      },
      { batch: batch('task-1', 'mem', 8, [[5, 6]]), partition: 2, offset: 42 },
    ];
    const { columns, rows } = decodeBlock(encodePointsBlock(segments, undefined, STAGE_BLOCK_COLUMNS));
    expect(columns.map(([name]) => name)).toEqual(['metric_name', 'ts', 'value', 'updated_at', 'kafka_offset', 'row_in_batch']);
    expect(rows).toEqual(expectedRows(segments).map(({ task_id: _t, kafka_partition: _p, ...rest }) => rest));
    expect(insertPointsSql('points_stage_x', STAGE_BLOCK_COLUMNS)).toBe(
      'INSERT INTO points_stage_x (metric_name, ts, value, updated_at, kafka_offset, row_in_batch) FORMAT Native',
    );
    expect(() => encodePointsBlock(segments, undefined, ['ts', 'metric_name'])).toThrow(/in their order/);
  });
});

describe('a BlockBuffer', () => {
  const at = (offset: number, n: number): Segment[] => [
    {
      batch: batch(
        `task-${offset}`,
        `m.${offset}`,
        offset,
        Array.from({ length: n }, (_, i): [number, number] => [i * 1000 + offset, i / 4]),
      ),
      partition: offset % 3,
      offset,
    },
  ];

  it('encodes the same bytes as a block of its own, into one buffer again once the insert ended', () => {
    const blocks = new BlockBuffer();
    const first = encodePointsBlock(at(1, 5000), blocks);
    expect(first.equals(encodePointsBlock(at(1, 5000)))).toBe(true);
    blocks.giveBack(first, true);
    const second = encodePointsBlock(at(2, 4000), blocks);
    expect(second.buffer).toBe(first.buffer);
    expect(decodeBlock(second).rows).toEqual(expectedRows(at(2, 4000)));
  });

  it('gives a block asked for while one is lent a buffer of its own, and keeps the lent one lent', () => {
    const blocks = new BlockBuffer();
    const lent = encodePointsBlock(at(1, 100), blocks);
    const other = encodePointsBlock(at(2, 100), blocks);
    expect(other.buffer).not.toBe(lent.buffer);
    blocks.giveBack(other, true);
    const third = encodePointsBlock(at(3, 100), blocks);
    expect(third.buffer).not.toBe(lent.buffer);
    expect(decodeBlock(lent).rows).toEqual(expectedRows(at(1, 100)));
  });

  it('never writes again into a block whose insert failed (a request may still be reading it)', () => {
    const blocks = new BlockBuffer();
    const failed = encodePointsBlock(at(1, 100), blocks);
    const copy = Buffer.from(failed);
    blocks.giveBack(failed, false);
    const next = encodePointsBlock(at(2, 100), blocks);
    expect(next.buffer).not.toBe(failed.buffer);
    expect(failed.equals(copy)).toBe(true);
  });

  it('grows for a larger block', () => {
    const blocks = new BlockBuffer();
    blocks.giveBack(encodePointsBlock(at(1, 10), blocks), true);
    const large = encodePointsBlock(at(2, 20_000), blocks);
    expect(decodeBlock(large).rows).toEqual(expectedRows(at(2, 20_000)));
  });

  it('frees the smaller buffer at once when it grows, and never a lent one or one whose insert failed', () => {
    const blocks = new BlockBuffer();
    const small = encodePointsBlock(at(1, 1000), blocks);
    blocks.giveBack(small, true);
    const large = encodePointsBlock(at(2, 20_000), blocks);
    expect((small.buffer as ArrayBuffer).detached).toBe(true);
    expect(decodeBlock(large).rows).toEqual(expectedRows(at(2, 20_000)));
    // Lent while a larger block is asked for: that one gets a buffer of its own, the lent one stays.
    const larger = encodePointsBlock(at(3, 40_000), blocks);
    expect((large.buffer as ArrayBuffer).detached).toBe(false);
    expect(decodeBlock(larger).rows).toEqual(expectedRows(at(3, 40_000)));
    blocks.giveBack(larger, true);
    blocks.giveBack(large, false);
    expect(encodePointsBlock(at(4, 40_000), blocks).buffer).not.toBe(large.buffer);
    expect((large.buffer as ArrayBuffer).detached).toBe(false);
    expect(decodeBlock(large).rows).toEqual(expectedRows(at(2, 20_000)));
  });
});

describe('the insert token of a block', () => {
  const at = (partition: number, offset: number, points: Array<[number, number]> = [[1, 1]]): Segment => ({
    batch: batch('t', 'm', 1, points),
    partition,
    offset,
  });

  it('names the table and, per partition in order, the first and last batch offset', () => {
    expect(insertToken('points', [at(2, 95), at(0, 120), at(0, 150), at(0, 180)])).toBe('points:0=120-180,2=95-95');
    expect(insertToken('points_g2', [at(0, 120), at(0, 180), at(2, 95)])).toBe('points_g2:0=120-180,2=95-95');
  });

  it("is the same for a retried block, and another for equal points at other offsets (a user's duplicate upload)", () => {
    const block = [
      at(1, 7, [
        [10, 1],
        [10, 1],
      ]),
      at(1, 9, [[11, 2]]),
    ];
    expect(insertToken('points', block)).toBe(
      insertToken(
        'points',
        block.map((s) => ({ ...s })),
      ),
    );
    expect(
      insertToken(
        'points',
        block.map((s) => ({ ...s, offset: s.offset + 10 })),
      ),
    ).not.toBe(insertToken('points', block));
  });
});
