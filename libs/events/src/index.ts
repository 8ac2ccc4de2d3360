export { crc64Avro } from './crc64-avro.ts';
export { writeHeader, parseHeader, MARKER, HEADER_LENGTH } from './single-object.ts';
export { SchemaRegistry, canonicalForm, fingerprintOf, SCHEMAS_DIR, type SchemaVersion } from './registry.ts';
export { createEventCodec, UndecodableEventError, type CodecOptions, type EventCodec, type EventLike } from './codec.ts';
export { packPointColumns, unpackPointColumns, type PointColumns } from './point-columns.ts';
