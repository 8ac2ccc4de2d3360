import { z } from 'zod';
import { positiveInt } from './schemas.ts';

/** Defined files: quotas, sharing, and the collection of blobs no file references. */
export const filesSettings = {
  MERIDIAN_FILE_QUOTA_BYTES: {
    schema: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    default: '10000000000',
    doc: 'The default quota: bytes of defined files an account may keep (its live files plus definitions in progress) unless an admin set its own (PUT /api/v1/users/{user_name}/file_quota or `meridian quota`); over it a definition gets 413 saying how much is left. GET /api/v1/users shows usage and the quota that applies.',
  },
  MERIDIAN_MAX_FILES_PER_USER: {
    schema: positiveInt,
    default: '10000',
    doc: 'Files a user may hold (live files plus definitions in progress); one more gets 409 /problems/limit-reached until a file is deleted. Empty files are refused (400).',
  },
  MERIDIAN_MAX_GRANTS_PER_FILE: {
    schema: positiveInt,
    default: '1000',
    doc: 'Users one file may be shared with; one more gets 409 /problems/limit-reached (grants are recorded for any well-formed name, so this bounds what every process folds for a file).',
  },
  MERIDIAN_FILES_READ_MODEL_WAIT_MS: {
    schema: positiveInt,
    default: '10000',
    doc: "Longest an api request waits for the files read model to reach the files log's end (a file command deciding, a lookup of an id not shown yet, a list or usage right after a definition succeeded) or a command's own event. Past it a file command gets 503 (it decides on nothing older); a lookup, list or quota check answers with what the read model holds. The ingest worker's blob collector waits as long for the read model to reach the log's end before it removes anything, and past it tries again later.",
  },
  MERIDIAN_BLOB_SWEEP_INTERVAL_MS: {
    schema: positiveInt,
    default: '5000',
    doc: "How often the ingest worker's blob collector looks in the files read model for deletions past its sweep position (blobs of definitions that failed after promoting are checked at once), and how long it waits before retrying a collection that failed. A deleted file's bytes leave storage within about this long once the read model shows the deletion and no other file has the same content.",
  },
  MERIDIAN_BLOB_REMOVAL_LEASE_MS: {
    schema: positiveInt,
    default: '600000',
    doc: "How long a blob collection owns the bytes it keeps aside while it checks a removal, each copy counted from when it is made (however long the copy took): it starts no removal once its first copy is a quarter of this old, leaves for a later collection (without failing this one) any blob whose copy MinIO already dates older than a quarter of this, puts back each copy its check ends past half of this, and another worker's collection takes over kept bytes (puts them back, decides again) only once they are older than this whole lease. So a worker pause, or a clock difference between workers and MinIO, of about a quarter of this can let a takeover run beside a removal: keep a quarter of it well above both. At least 4 × MERIDIAN_FILES_READ_MODEL_WAIT_MS.",
  },
  MERIDIAN_BLOB_CLAIM_TTL_MS: {
    schema: positiveInt,
    default: '7200000',
    doc: "Age past which a file definition's claim on its blob counts as a dead definition's, and a blob collection deletes it (claims of finished tasks are deleted sooner); a definition whose look at its blob ended past half of this claims and looks again, and one about to commit past half of this after its claim aborts that commit and runs again (a retry within MERIDIAN_UPLOAD_ATTEMPTS). At least MERIDIAN_UPLOAD_TIME_BUDGET_MS.",
  },
} as const;
