import { ApiError } from './api-client.ts';

/**
 * The api names its parameters (start_date, metric_name, max_rows); a person typed the CLI's
 * flags. An api refusal of a command's request is told in the flags' names.
 */
const FLAGS: Record<string, string> = {
  start_date: '--from',
  end_date: '--to',
  metrics: '--metric',
  metric_name: '--metric',
  pattern: '--pattern',
  file_format: '--format',
  format: '--format',
  latest_only: '--latest-only',
  max_rows: '--page-rows',
  on_error: '--on-error',
  name_contains: '--name-contains',
  file_description: '--description',
  limit: '--limit',
};

/** In prose only the names no sentence uses (start_date, not metrics) are replaced. */
const IN_PROSE = new RegExp(
  `(?<![\\w-])(?:query\\.|body\\.)?(${Object.keys(FLAGS)
    .filter((k) => k.includes('_'))
    .join('|')})(?![\\w-])`,
  'g',
);

export function inFlags(text: string): string {
  return text.replace(IN_PROSE, (_m, name: string) => FLAGS[name]!);
}

/** A field of the api's errors list: its flag when it has one. */
function fieldFlag(field: string): string {
  return FLAGS[field.replace(/^(query|body)\./, '')] ?? field;
}

/** The same refusal with the api's parameter names turned into the CLI's flags; anything else as it is. */
export function withFlagNames(error: unknown): unknown {
  if (!(error instanceof ApiError)) return error;
  const problem = error.problem && {
    ...error.problem,
    ...(error.problem.detail ? { detail: inFlags(error.problem.detail) } : {}),
    errors: (error.problem.errors ?? []).map((e) => {
      const { field, reason } = e as { field?: string; reason?: string };
      return { ...(e as object), ...(field ? { field: fieldFlag(field) } : {}), ...(reason ? { reason: inFlags(reason) } : {}) };
    }),
  };
  return new ApiError(error.status, problem, inFlags(error.message), error.retryAfterMs);
}
