import type { ApiParts } from '../api-parts.ts';
import type { JsonUploadChecker } from './json-check-pool.ts';
import type { PushDeps } from './push-submit.ts';
import type { UploadDeps } from './routes.ts';

export function uploadDeps(
  { services, settings, tasks, slots, bodies, submit, metrics }: ApiParts,
  push: PushDeps | undefined,
  jsonChecker: JsonUploadChecker,
): UploadDeps {
  return {
    storage: services.blobs,
    limits: {
      jsonBodyBytes: settings.MERIDIAN_MAX_JSON_BODY_BYTES,
      uploadBytes: settings.MERIDIAN_MAX_UPLOAD_BYTES,
      pointsPerJsonUpload: settings.MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD,
    },
    jsonChecker,
    ...(push ? { push } : {}),
    caps: {
      inFlight: slots.uploads,
      queuedTasks: settings.MERIDIAN_MAX_QUEUED_TASKS_PER_USER,
      unfinished: () => tasks.unfinished,
      backlog: {
        perUser: settings.MERIDIAN_UPLOAD_BACKLOG_PER_USER,
        waitMs: settings.MERIDIAN_UPLOAD_BACKLOG_WAIT_MS,
        untilOneEnds: (user, ms, signal) => tasks.ends.waitForUser(user, ms, signal),
      },
    },
    bodies,
    submit,
    metrics,
  };
}
