import type { Settings } from '@meridian/config';
import type { SchemaLimits } from '@meridian/domain';

/** The file commands' options (definitions and the blob collector), compiled once at start. */
export type FileCommandsOptions = {
  /** Longest the blob collector waits for the files read model to reach the log's end (MERIDIAN_FILES_READ_MODEL_WAIT_MS, 10000). */
  readonly readModelWaitMs: number;
  /** The pause between two sweeps of the blob collector (MERIDIAN_BLOB_SWEEP_INTERVAL_MS, 5000). */
  readonly sweepIntervalMs: number;
  /** How long a collection owns the bytes it keeps aside while it checks a removal (MERIDIAN_BLOB_REMOVAL_LEASE_MS, 600000). */
  readonly removalLeaseMs: number;
  /** Age past which a definition's claim on its blob counts as a dead definition's (MERIDIAN_BLOB_CLAIM_TTL_MS, 7200000). */
  readonly claimTtlMs: number;
  /** A CSV header's longest line and most columns, for enforce_schema (MERIDIAN_MAX_LINE_BYTES 65536, MERIDIAN_MAX_COLUMNS 64). */
  readonly schemaLimits: SchemaLimits;
  /** Runs of a definition that stop on storage trouble before its task fails (MERIDIAN_UPLOAD_ATTEMPTS, 5). */
  readonly attempts: number;
};

export function fileCommandsOptions(settings: Settings): FileCommandsOptions {
  return {
    readModelWaitMs: settings.MERIDIAN_FILES_READ_MODEL_WAIT_MS,
    sweepIntervalMs: settings.MERIDIAN_BLOB_SWEEP_INTERVAL_MS,
    removalLeaseMs: settings.MERIDIAN_BLOB_REMOVAL_LEASE_MS,
    claimTtlMs: settings.MERIDIAN_BLOB_CLAIM_TTL_MS,
    schemaLimits: { maxHeaderLength: settings.MERIDIAN_MAX_LINE_BYTES, maxColumns: settings.MERIDIAN_MAX_COLUMNS },
    attempts: settings.MERIDIAN_UPLOAD_ATTEMPTS,
  };
}
