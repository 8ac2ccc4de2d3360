import type { Settings } from '@meridian/config';

/** The archiver's options, compiled once at start; null when MERIDIAN_ARCHIVE is off (it is on by default). */
export type ArchiveOptions = {
  /** Records' bytes after which a segment is cut (MERIDIAN_ARCHIVE_SEGMENT_BYTES, 64 MiB). */
  readonly segmentBytes: number;
  /** How long archived point batches stay on the brokers (MERIDIAN_ARCHIVE_RETENTION_MS, 7 days). */
  readonly retentionMs: number;
  /** The pause between two passes (MERIDIAN_ARCHIVE_INTERVAL_MS, 60000). */
  readonly intervalMs: number;
  /** The longest a pass may take before it is abandoned (MERIDIAN_ARCHIVE_PASS_TIMEOUT_MS, 15 minutes). */
  readonly passTimeoutMs: number;
};

export function archiveOptions(settings: Settings): ArchiveOptions | null {
  if (!settings.MERIDIAN_ARCHIVE) return null;
  return {
    segmentBytes: settings.MERIDIAN_ARCHIVE_SEGMENT_BYTES,
    retentionMs: settings.MERIDIAN_ARCHIVE_RETENTION_MS,
    intervalMs: settings.MERIDIAN_ARCHIVE_INTERVAL_MS,
    passTimeoutMs: settings.MERIDIAN_ARCHIVE_PASS_TIMEOUT_MS,
  };
}
