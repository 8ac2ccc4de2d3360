import { Readable } from 'node:stream';
import {
  Field,
  Float64,
  Int64,
  makeData,
  RecordBatch,
  RecordBatchStreamWriter,
  Schema,
  Struct,
  TimestampMillisecond,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { RollupRow } from '@meridian/clickhouse';
import { formatTimestamp } from '@meridian/domain';
import type { ColumnarFormat } from './columnar.ts';

/**
 * The body of a download at a resolution (1m, 1h): one row per metric and bucket, with the
 * aggregates of its deduplicated points. A page is at most MERIDIAN_MAX_ROLLUP_ROWS rows, read
 * whole before it is written, so each format is encoded in one piece.
 */

export const ROLLUP_CSV_HEADER = 'metric_name,bucket,count,min,max,sum,avg,last';
export const ROLLUP_COLUMNS = ['metric_name', 'bucket', 'count', 'min', 'max', 'sum', 'avg', 'last'] as const;

/** As a download writes names: quoted (RFC 4180) when they hold a quote, a comma or a semicolon. */
function csvName(name: string): string {
  return /[",;]/.test(name) ? `"${name.replaceAll('"', '""')}"` : name;
}

/** JavaScript's shortest decimal that reads back as the same double (1e+21 where ClickHouse writes 1e21). */
const num = (n: number) => String(n);

export function rollupCsv(rows: readonly RollupRow[]): string {
  const lines = rows.map(
    (r) => `${csvName(r.metric_name)},${formatTimestamp(r.bucket)},${r.count},${num(r.min)},${num(r.max)},${num(r.sum)},${num(r.avg)},${num(r.last)}`,
  );
  return `${[ROLLUP_CSV_HEADER, ...lines].join('\n')}\n`;
}

export function rollupJson(rows: readonly RollupRow[]): string {
  return JSON.stringify(
    rows.map((r) => ({
      metric_name: r.metric_name,
      bucket: formatTimestamp(r.bucket),
      count: r.count,
      min: r.min,
      max: r.max,
      sum: r.sum,
      avg: r.avg,
      last: r.last,
    })),
  );
}

const DOUBLES = ['min', 'max', 'sum', 'avg', 'last'] as const;

const ARROW_SCHEMA = new Schema([
  new Field('metric_name', new Utf8(), false),
  new Field('bucket', new TimestampMillisecond('UTC'), false),
  new Field('count', new Int64(), false),
  ...DOUBLES.map((name) => new Field(name, new Float64(), false)),
]);

function arrowBytes(rows: readonly RollupRow[]): Uint8Array {
  const n = rows.length;
  const int64 = (values: (r: RollupRow) => number) => BigInt64Array.from(rows, (r) => BigInt(values(r)));
  const children = [
    vectorFromArray(
      rows.map((r) => r.metric_name),
      new Utf8(),
    ).data[0]!,
    makeData({ type: new TimestampMillisecond('UTC'), length: n, nullCount: 0, data: int64((r) => r.bucket) }),
    makeData({ type: new Int64(), length: n, nullCount: 0, data: int64((r) => r.count) }),
    ...DOUBLES.map((name) => makeData({ type: new Float64(), length: n, nullCount: 0, data: Float64Array.from(rows, (r) => r[name]) })),
  ];
  const batch = new RecordBatch(ARROW_SCHEMA, makeData({ type: new Struct(ARROW_SCHEMA.fields), length: n, nullCount: 0, children }));
  return RecordBatchStreamWriter.writeAll(n === 0 ? [] : [batch]).toUint8Array(true);
}

const TIMESTAMP_MS_UTC = { type: 'INT64', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' }, repetition_type: 'REQUIRED' } as const;
const PARQUET_SCHEMA = [
  { name: 'root', num_children: ROLLUP_COLUMNS.length },
  { name: 'metric_name', type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' }, repetition_type: 'REQUIRED' },
  { name: 'bucket', ...TIMESTAMP_MS_UTC },
  { name: 'count', type: 'INT64', repetition_type: 'REQUIRED' },
  ...DOUBLES.map((name) => ({ name, type: 'DOUBLE', repetition_type: 'REQUIRED' })),
] as const;

function parquetBytes(rows: readonly RollupRow[]): Uint8Array {
  const writer = new ByteWriter();
  const parquet = new ParquetWriter({ writer, schema: PARQUET_SCHEMA as never, codec: 'SNAPPY' });
  if (rows.length > 0) {
    const encoder = new TextEncoder();
    void parquet.write({
      columnData: [
        { name: 'metric_name', data: rows.map((r) => encoder.encode(r.metric_name)) },
        { name: 'bucket', data: BigInt64Array.from(rows, (r) => BigInt(r.bucket)) },
        { name: 'count', data: BigInt64Array.from(rows, (r) => BigInt(r.count)) },
        ...DOUBLES.map((name) => ({ name, data: Float64Array.from(rows, (r) => r[name]) })),
      ],
      rowGroupSize: rows.length,
    });
  }
  void parquet.finish();
  return new Uint8Array(writer.getBuffer());
}

export function rollupColumnar(format: ColumnarFormat, rows: readonly RollupRow[]): Readable {
  const bytes = format === 'arrow' ? arrowBytes(rows) : parquetBytes(rows);
  return Readable.from([Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)]);
}

/** A rollup page's cursor, before it is sealed: the last (metric_name, bucket) of the page. */
export function encodeRollupCursor(c: { metric_name: string; bucket: number }): string {
  return JSON.stringify(['rollup', c.metric_name, c.bucket]);
}

export function decodeRollupCursor(text: string): { metric_name: string; bucket: number } | null {
  try {
    const v = JSON.parse(text) as unknown;
    if (Array.isArray(v) && v.length === 3 && v[0] === 'rollup' && typeof v[1] === 'string' && Number.isSafeInteger(v[2]))
      return { metric_name: v[1], bucket: v[2] as number };
  } catch {
    // not ours: answered as any cursor this query did not issue
  }
  return null;
}
