import { z } from 'zod';
import { positiveInt } from './schemas.ts';

/** Read by `meridian` only. */
export const cliSettings = {
  MERIDIAN_CLI_UPLOADS_AT_ONCE: {
    schema: z.coerce.number().int().min(1).max(64),
    default: '4',
    doc: "Files `meridian upload` sends at once; below the api's MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER (default 8), so one user's CLI leaves room for their other clients.",
  },
  MERIDIAN_CLI_DOWNLOAD_PAGE_ROWS: {
    schema: positiveInt,
    default: '1000000',
    doc: 'Rows per page (max_rows) `meridian download` asks for; each page ends with a resume point, so it bounds what an interrupted download fetches again (--page-rows overrides it).',
  },
  MERIDIAN_CLI_RETRIES: {
    schema: z.coerce.number().int().min(0).max(100),
    default: '20',
    doc: "Times the CLI repeats a request answered 429 or 503 (after its Retry-After) or cut by a network error before it gives up with the api's answer.",
  },
  MERIDIAN_CLI_POLL_MS: {
    schema: z.coerce.number().int().min(50),
    default: '500',
    doc: 'How often `meridian tasks --watch` refreshes its list.',
  },
  MERIDIAN_CLI_TASK_WAIT_SECONDS: {
    schema: z.coerce.number().int().min(1).max(3600),
    default: '1',
    doc: "Longest one task request of the CLI waits for the task to end (GET /api/v1/tasks/{task_id}?wait=N, shortened to the api's MERIDIAN_TASK_MAX_WAIT_SECONDS): the end is seen at once, and the progress line shows the task's rows at least this often while it runs (one request a second by default, where polling took two).",
  },
} as const;
