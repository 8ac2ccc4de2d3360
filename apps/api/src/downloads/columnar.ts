import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import {
  AsyncByteQueue,
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
  type Vector,
} from 'apache-arrow';
import type { ArrayBufferViewInput } from 'apache-arrow/util/buffer';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { PointColumns } from '@meridian/clickhouse';
import { writeRowGroup } from './parquet-row-group.ts';
import { releasedOnceSent } from './sent-buffers.ts';
import { releaseNow } from '../http/release-memory.ts';

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

/**
 * The download's body in `format`, from its batches; a download without rows is a valid empty
 * stream or file. The batches are the body's: each batch's columns are freed once encoded. With
 * `response`, each encoded piece is freed once the socket has written it (sent-buffers.ts).
 */
export function columnarBody(format: ColumnarFormat, batches: AsyncIterable<PointColumns>, response?: ServerResponse): Readable {
  const chunks = format === 'arrow' ? arrowChunks(batches) : parquetChunks(batches);
  return response ? releasedOnceSent(chunks, response) : Readable.from(chunks, { objectMode: false });
}

/** A batch's own columns, once encoded (the dictionary is the page's, shared by every batch: kept). */
const releaseColumns = (c: PointColumns) => releaseNow([c.nameIndex, c.timestamps, c.values, c.updatedAt]);

/**
 * metric_name is dictionary-encoded: a 4-byte index a row into a dictionary of names, which a
 * reader keeps as a category (pandas) or Categorical (polars) rather than one string object per
 * row. A download's batches share the page's dictionary, sent once before the first batch; a
 * batch with another dictionary sends it as a replacement (the streaming format allows it).
 * The dictionary's id is 0.
 */
const NAME_TYPE = new Dictionary(new Utf8(), new Int32(), 0);
const ARROW_SCHEMA = new Schema([
  new Field('metric_name', NAME_TYPE, false),
  new Field('timestamp', new TimestampMillisecond('UTC'), false),
  new Field('metric_numeric_value', new Float64(), false),
  new Field('updated_at', new TimestampMillisecond('UTC'), false),
]);

/** The dictionary of a batch's names as a Vector, the same object for batches sharing their dictionary's bytes (so it is written once). */
function namesVector(): (c: PointColumns) => Vector<Utf8> {
  let bytes: Uint8Array | null = null;
  let vector: Vector<Utf8> | null = null;
  return (c) => {
    if (c.dictionaryBytes !== bytes || vector === null) {
      const length = c.dictionaryOffsets.length - 1;
      vector = makeVector(makeData({ type: new Utf8(), length, nullCount: 0, valueOffsets: c.dictionaryOffsets, data: c.dictionaryBytes }));
      bytes = c.dictionaryBytes;
    }
    return vector;
  };
}

function recordBatch(c: PointColumns, names: Vector<Utf8>): RecordBatch {
  const n = c.rows;
  const children = [
    makeData({ type: NAME_TYPE, length: n, nullCount: 0, data: c.nameIndex, dictionary: names }),
    makeData({ type: new TimestampMillisecond('UTC'), length: n, nullCount: 0, data: c.timestamps }),
    makeData({ type: new Float64(), length: n, nullCount: 0, data: c.values }),
    makeData({ type: new TimestampMillisecond('UTC'), length: n, nullCount: 0, data: c.updatedAt }),
  ];
  return new RecordBatch(ARROW_SCHEMA, makeData({ type: new Struct(ARROW_SCHEMA.fields), length: n, nullCount: 0, children }));
}

/** The writer's sink: the pieces of bytes it wrote since they were last taken, not a queue that waits for a reader. */
class TakenBytes extends AsyncByteQueue {
  private pieces: Uint8Array[] = [];

  override write(value: ArrayBufferViewInput | Uint8Array): void {
    this.pieces.push(value as Uint8Array);
  }

  /** What was written since the last take, as one Buffer (one write to the socket). */
  take(): Buffer {
    const out = Buffer.concat(this.pieces);
    this.pieces = [];
    return out;
  }
}

/**
 * An Arrow IPC stream (Arrow's columnar format spec, "IPC Streaming Format"): the schema, a
 * dictionary message when the names change, a record batch message per block, the end marker.
 * One writer for the whole stream, so a dictionary shared by the batches goes once. Each batch
 * is encoded when the response asks for more bytes, so a slow client holds the download back
 * one batch at a time. (apache-arrow's own Node duplex acknowledges a batch as soon as it is
 * queued, so its queue of encoded bytes grows without bound when ClickHouse is faster than the
 * client: 183 MB more RSS in a 10M-row download; the sink here holds one batch's bytes.)
 */
async function* arrowChunks(batches: AsyncIterable<PointColumns>): AsyncGenerator<Buffer> {
  const sink = new TakenBytes();
  const writer = new RecordBatchStreamWriter();
  writer.reset(sink, ARROW_SCHEMA);
  yield sink.take();
  const names = namesVector();
  for await (const c of batches) {
    writer.write(recordBatch(c, names(c)));
    const encoded = sink.take();
    releaseColumns(c);
    yield encoded;
  }
  writer.finish();
  yield sink.take();
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
    releaseColumns(c);
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
