export {
  planExport,
  streamExport,
  encodeExportCursor,
  decodeExportCursor,
  resolveTypes,
  ExportRequestError,
  EXPORT_TOPICS,
  type ExportCursor,
  type ExportDeps,
  type ExportFormat,
  type ExportPlan,
  type ExportRequest,
  type LoggedEvent,
} from './export.ts';
export { envelopeSchema, envelopeType, ENVELOPE_NAME } from './export-schema.ts';
