import { z } from 'zod';
import { bool } from './schemas.ts';

const DAY_MS = 86_400_000;

/** The points topic's archive in object storage, and the window the brokers keep. */
export const archiveSettings = {
  MERIDIAN_ARCHIVE: {
    schema: bool,
    default: 'true',
    doc: 'Whether the ingest worker that projects points partition 0 archives the points topic into the service bucket (`_archive/<topic>/`) and removes from the brokers what is archived, projected and older than MERIDIAN_ARCHIVE_RETENTION_MS (on by default). Off: the brokers keep every point batch for ever. Replay reads the archive whenever it holds anything, whatever this setting says.',
  },
  MERIDIAN_ARCHIVE_RETENTION_MS: {
    schema: z.coerce
      .number()
      .int()
      .min(1000)
      .max(3650 * DAY_MS),
    default: String(7 * DAY_MS),
    doc: "With MERIDIAN_ARCHIVE on: how long (by record timestamp) point batches stay on the brokers once archived; 1 s to 10 years. A batch the live projector has not committed, or the archive does not hold yet, stays whatever its age. A tenth of it (at least an hour) is the points topic's segment.ms when Meridian creates the topic, so that the brokers' disk shrinks after a trim.",
  },
  MERIDIAN_ARCHIVE_SEGMENT_BYTES: {
    schema: z.coerce
      .number()
      .int()
      .min(1024)
      .max(512 * 1024 * 1024),
    default: String(64 * 1024 * 1024),
    doc: "Records' bytes (keys and values, before zstd) after which an archive segment is cut (a partition's last, smaller one once its first record is half of MERIDIAN_ARCHIVE_RETENTION_MS old); 1 KiB to 512 MiB. The archiver holds up to two segments' bytes: the one it writes and checks, and the partial last segments it keeps for its next pass (so that it reads only what is new); a replay holds one while it reads it.",
  },
  MERIDIAN_ARCHIVE_INTERVAL_MS: {
    schema: z.coerce.number().int().min(100).max(DAY_MS),
    default: '60000',
    doc: 'With MERIDIAN_ARCHIVE on: the pause between two archiving passes (each archives the points topic to its last stable offset, then removes from the brokers what may go); 100 ms to 1 day.',
  },
  MERIDIAN_ARCHIVE_PASS_TIMEOUT_MS: {
    schema: z.coerce.number().int().min(1000).max(DAY_MS),
    default: String(15 * 60_000),
    doc: "With MERIDIAN_ARCHIVE on: the longest one archiving pass (archive, then trim) may take; 1 s to 1 day. Past it the pass's reads are cancelled, a warning is logged and the next pass starts again from the archive index: a read or a request that hangs delays archiving by this much, never for good. Segments written before stay, so a pass over a long backlog that runs out of time is continued by the next one.",
  },
} as const;
