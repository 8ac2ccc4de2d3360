import { packPointColumns, unpackPointColumns } from './point-columns.ts';

/**
 * Fields of an event written in a layout of their own inside one `bytes` field, which the codec
 * alone knows of: encoding packs the fields into it and leaves them empty; decoding unpacks them,
 * so a decoded event holds its fields as an older version would, whatever wrote it.
 */
export type Packing = {
  /** The `bytes` field that holds the packed fields; empty when they are written as fields. */
  readonly field: string;
  pack(fields: Record<string, unknown>): void;
  unpack(record: Record<string, unknown>): void;
};

/** A point batch's timestamps, values and name index, by series (point-columns.ts): PointBatch v5's `columns`. */
const pointColumns: Packing = {
  field: 'columns',
  pack(fields) {
    const names = fields.names as readonly string[] | undefined;
    const series = names === undefined || names.length === 0 ? 1 : names.length;
    const nameIndex = series === 1 ? [] : (fields.name_index as readonly number[]);
    fields.columns = packPointColumns({ timestamps: fields.timestamps as number[], values: fields.values as number[], nameIndex }, series);
    fields.timestamps = [];
    fields.values = [];
    fields.name_index = [];
  },
  unpack(record) {
    const packed = record.columns as Buffer;
    delete record.columns;
    if (packed.length === 0) return;
    const names = record.names as readonly string[];
    const { timestamps, values, nameIndex } = unpackPointColumns(packed, names.length === 0 ? 1 : names.length);
    record.timestamps = timestamps;
    record.values = values;
    // One name in `names` packs no index (every point is its); as written, each point says so.
    record.name_index = names.length === 1 ? timestamps.map(() => 0) : nameIndex;
  },
};

const PACKINGS: readonly Packing[] = [pointColumns];

type RecordSchema = { readonly fields: ReadonlyArray<{ readonly name: string; readonly type: unknown }> };

/** The packings a version has: a `bytes` field of a packing's name, beside the fields it packs. */
export function packingsOf(schema: RecordSchema): Packing[] {
  return PACKINGS.filter((p) => schema.fields.some((f) => f.name === p.field && f.type === 'bytes'));
}
