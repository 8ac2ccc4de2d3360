import { Readable } from 'node:stream';
import {
  Dictionary,
  Field,
  Float64,
  Int32,
  makeData,
  makeVector,
  RecordBatch,
  RecordBatchStreamWriter,
  Schema,
  Struct,
  TimestampMillisecond,
  Utf8,
} from 'apache-arrow';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { PointColumns } from '@meridian/clickhouse';
import { writeRowGroup } from './parquet-row-group.ts';

/**
 * The typed formats of a download, for data frames: the CSV's four columns, typed, written
 * batch by batch as ClickHouse sends its blocks (one block of MERIDIAN_DOWNLOAD_BATCH_ROWS rows
 * at most in memory). ClickHouse 18.16 writes neither format (Parquet came in 19.4, Arrow later),
 * so the api encodes them: apache-arrow (the Arrow project's own JavaScript library) for the
 * IPC stream, hyparquet-writer for Parquet (pure JavaScript, no native or wasm build, and it
 * writes a file row group by row group, which parquet-wasm cannot).
 */
export type ColumnarFormat = 'arrow' | 'parquet';

/** Media types and file extensions by the formats' own conventions. */
export const COLUMNAR_MEDIA: Record<ColumnarFormat, { readonly type: string; readonly extension: string }> = {
  arrow: { type: 'application/vnd.apache.arrow.stream', extension: 'arrows' },
  parquet: { type: 'application/vnd.apache.parquet', extension: 'parquet' },
};

export const isColumnar = (format: string): format is ColumnarFormat => format === 'arrow' || format === 'parquet';

/** The download's body in `format`, from its batches; a download without rows is a valid empty stream or file. */
export function columnarBody(format: ColumnarFormat, batches: AsyncIterable<PointColumns>): Readable {
  return format === 'arrow' ? arrowStream(batches) : Readable.from(parquetChunks(batches), { objectMode: false });
}

/**
 * metric_name is dictionary-encoded: each record batch carries its own dictionary (a replacement
 * of the one before, which the streaming format allows) of the batch's runs of names, and a
 * 4-byte index a row. A reader keeps names as a category (pandas) or Categorical (polars)
 * rather than one string object per row. The dictionary's id is 0.
 */
const NAME_TYPE = new Dictionary(new Utf8(), new Int32(), 0);
const ARROW_SCHEMA = new Schema([
  new Field('metric_name', NAME_TYPE, false),
  new Field('timestamp', new TimestampMillisecond('UTC'), false),
  new Field('metric_numeric_value', new Float64(), false),
  new Field('updated_at', new TimestampMillisecond('UTC'), false),
]);

function recordBatch(c: PointColumns): RecordBatch {
  const n = c.rows;
  const entries = c.dictionaryOffsets.length - 1;
  const names = makeData({ type: new Utf8(), length: entries, nullCount: 0, valueOffsets: c.dictionaryOffsets, data: c.dictionaryBytes });
  const children = [
    makeData({ type: NAME_TYPE, length: n, nullCount: 0, data: c.nameIndex, dictionary: makeVector(names) }),
    makeData({ type: new TimestampMillisecond('UTC'), length: n, nullCount: 0, data: c.timestamps }),
    makeData({ type: new Float64(), length: n, nullCount: 0, data: c.values }),
    makeData({ type: new TimestampMillisecond('UTC'), length: n, nullCount: 0, data: c.updatedAt }),
  ];
  return new RecordBatch(ARROW_SCHEMA, makeData({ type: new Struct(ARROW_SCHEMA.fields), length: n, nullCount: 0, children }));
}

/**
 * The IPC stream's framing (Arrow's columnar format spec, "IPC Streaming Format"): the schema
 * message, then record batch messages, then the end-of-stream marker (0xFFFFFFFF, then a zero
 * length). Found once from the writer itself: a stream of the schema alone.
 */
const { schemaMessage, endOfStream } = (() => {
  const writer = new RecordBatchStreamWriter();
  writer.reset(undefined, ARROW_SCHEMA);
  writer.finish();
  const bytes = writer.toUint8Array(true);
  return { schemaMessage: bytes.subarray(0, bytes.length - 8), endOfStream: bytes.subarray(bytes.length - 8) };
})();

/**
 * An Arrow IPC stream: the schema, a record batch message per block, the end marker. Each
 * batch is encoded when the response asks for more bytes, so a slow client holds the download
 * back one batch at a time. (apache-arrow's own Node duplex acknowledges a batch as soon as it is
 * queued, so its queue of encoded bytes grows without bound when ClickHouse is faster than the
 * client: 183 MB more RSS in a 10M-row download.)
 */
function arrowStream(batches: AsyncIterable<PointColumns>): Readable {
  return Readable.from(
    (async function* () {
      yield Buffer.from(schemaMessage);
      for await (const c of batches) {
        // A stream of this one batch: the same schema message, the batch's dictionary and record batch messages, the end marker.
        const stream = RecordBatchStreamWriter.writeAll([recordBatch(c)]).toUint8Array(true);
        if (Buffer.compare(stream.subarray(0, schemaMessage.length), schemaMessage) !== 0)
          throw new Error('apache-arrow wrote another schema message for the same schema');
        yield Buffer.from(stream.buffer, stream.byteOffset + schemaMessage.length, stream.length - schemaMessage.length - endOfStream.length);
      }
      yield Buffer.from(endOfStream);
    })(),
    { objectMode: false },
  );
}

const TIMESTAMP_MS_UTC = { type: 'INT64', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' }, repetition_type: 'REQUIRED' } as const;
const PARQUET_SCHEMA = [
  { name: 'root', num_children: 4 },
  { name: 'metric_name', type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' }, repetition_type: 'REQUIRED' },
  { name: 'timestamp', ...TIMESTAMP_MS_UTC },
  { name: 'metric_numeric_value', type: 'DOUBLE', repetition_type: 'REQUIRED' },
  { name: 'updated_at', ...TIMESTAMP_MS_UTC },
] as const;

/**
 * A Parquet file, a row group per block: the writer's bytes leave after each row group (its
 * flush), so the api holds one row group's encoding, never the file. The row groups are
 * written from the typed columns (parquet-row-group.ts).
 */
async function* parquetChunks(batches: AsyncIterable<PointColumns>): AsyncGenerator<Buffer> {
  const writer = new FlushingWriter();
  const out = writer.chunks;
  const parquet = new ParquetWriter({ writer, schema: PARQUET_SCHEMA as never, codec: 'SNAPPY' });
  for await (const c of batches) {
    if (c.rows === 0) continue;
    writeRowGroup(parquet, c);
    writer.flush();
    yield* out.splice(0);
  }
  void parquet.finish();
  writer.flush();
  yield* out.splice(0);
}

/** A ByteWriter whose bytes leave at each flush (after each row group) and are taken from `chunks`. */
class FlushingWriter extends ByteWriter {
  readonly chunks: Buffer[] = [];

  flush(): void {
    this.chunks.push(Buffer.from(this.buffer.slice(0, this.index)));
    this.index = 0;
  }
}
