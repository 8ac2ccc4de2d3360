import { z } from 'zod';
import { problemTypes, problemTypeUri, type ProblemType } from '../http/problem.ts';
import type { RouteDef } from '../http/route.ts';
import { rateLimitHeaderDocs } from '../http/rate-limit.ts';

type Json = Record<string, unknown>;

/** JSON Schema 2020-12 (OpenAPI 3.1's dialect) of a zod schema, without the $schema marker. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Json;
  return rest;
}

export const problemSchema = z.object({
  type: z.string().describe('A stable URI reference naming the kind of problem, e.g. /problems/validation'),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  instance: z.string().optional(),
  request_id: z.string().optional().describe('Also in the X-Request-Id header; find the logs with it'),
  errors: z.array(z.object({ field: z.string(), reason: z.string(), row: z.number().int().optional() })).optional(),
});

/** Every operation may answer these; routes add their own problems. */
function problemsOf(def: RouteDef): ProblemType[] {
  const out = new Set<ProblemType>(def.problems ?? []);
  if (def.query || def.params || def.headers || def.body || def.requestBodyDoc) out.add('validation');
  if (def.body) out.add('payload_too_large');
  if (def.query) out.add('uri_too_long');
  if (def.auth !== 'public') out.add('unauthenticated').add('rate_limited');
  if (def.auth === 'admin') out.add('forbidden');
  if (!def.streaming) out.add('timeout');
  out.add('internal');
  return [...out];
}

function parameters(def: RouteDef): Json[] {
  const params: Json[] = [];
  for (const [where, schema] of [
    ['query', def.query],
    ['path', def.params],
    ['header', def.headers],
  ] as const) {
    if (!schema) continue;
    const s = jsonSchema(schema, 'input') as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, prop] of Object.entries(s.properties ?? {})) {
      const { description, ...propSchema } = prop as Json & { description?: string };
      params.push({
        name,
        in: where,
        required: where === 'path' || (s.required ?? []).includes(name),
        schema: propSchema,
        ...(description ? { description } : {}),
      });
    }
  }
  return params;
}

function requestBody(def: RouteDef): Json | undefined {
  if (def.body) return { required: true, content: { 'application/json': { schema: jsonSchema(def.body, 'input') } } };
  if (def.requestBodyDoc) {
    return {
      required: true,
      ...(def.requestBodyDoc.description ? { description: def.requestBodyDoc.description } : {}),
      content: Object.fromEntries(Object.entries(def.requestBodyDoc.contentTypes).map(([type, schema]) => [type, { schema: jsonSchema(schema, 'input') }])),
    };
  }
  return undefined;
}

function responses(def: RouteDef): Json {
  const out: Json = {};
  for (const [status, doc] of Object.entries(def.responses)) {
    const contentType = doc.contentType ?? 'application/json';
    out[status] = {
      description: doc.description,
      ...(doc.headers
        ? {
            headers: Object.fromEntries(
              Object.entries(doc.headers).map(([h, d]) => [h, { description: d.description, schema: jsonSchema(d.schema, 'output') }]),
            ),
          }
        : {}),
      ...(doc.schema || doc.example !== undefined
        ? {
            content: {
              [contentType]: {
                ...(doc.schema ? { schema: jsonSchema(doc.schema, 'output') } : {}),
                ...(doc.example !== undefined ? { example: doc.example } : {}),
              },
              ...Object.fromEntries(
                Object.entries(doc.alsoAs ?? {}).map(([type, alt]) => [
                  type,
                  { schema: jsonSchema(alt.schema, 'output'), ...(alt.example !== undefined ? { example: alt.example } : {}) },
                ]),
              ),
            },
          }
        : {}),
    };
  }
  const fromProblems = new Set<string>();
  for (const problem of problemsOf(def)) {
    const { status, title } = problemTypes[problem];
    const key = String(status);
    const described = `${title} (problem type ${problemTypeUri(problem)})`;
    if (fromProblems.has(key)) {
      // Two problem types share a status (503: dependency unavailable, request timed out).
      (out[key] as { description: string }).description += `; or ${described}`;
      continue;
    }
    if (out[key]) continue;
    fromProblems.add(key);
    out[key] = {
      description: described,
      ...(status === 429 || status === 503
        ? { headers: { 'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } } } }
        : {}),
      content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
    };
  }
  // Every answer to an authenticated caller carries the rate limit headers.
  if (def.auth !== 'public') {
    for (const [key, response] of Object.entries(out) as Array<[string, Json & { headers?: Json }]>) {
      if (key === '401') continue;
      response.headers = {
        ...response.headers,
        ...Object.fromEntries(
          Object.entries(rateLimitHeaderDocs).map(([h, description]) => [
            h,
            { description, schema: h === 'RateLimit-Policy' ? { type: 'string' } : { type: 'integer', minimum: 0 } },
          ]),
        ),
      };
    }
  }
  return out;
}

/** The introduction /docs shows above the operations: written for the people calling the API. */
const intro = [
  'How to use it:',
  '- Sign in: send `Authorization: Bearer <API key>` with every request. An admin creates your user and its first key; POST /api/v1/api_keys makes more (each key is shown once; the service keeps only its SHA-256 digest). GET /api/v1/users shows who you are (an admin: every user). Try requests here with Authorize, or use the console at /console.',
  '- Put points in: POST /api/v1/metrics/upload (JSON) or POST /api/v1/metrics_file_upload (a CSV, JSON or NDJSON file). The answer is a task: follow it at GET /api/v1/tasks/{task_id} (queued → running → succeeded | failed); it succeeds once every accepted point can be read.',
  '- Get points out: GET /api/v1/metrics lists the metrics you may read; GET /api/v1/metrics/download gives their points as CSV or JSON, a page at a time (X-Next-Cursor continues); GET /api/v1/metrics/series samples any range into at most a few thousand min/max/average buckets per metric, for charts.',
  '- Files: POST /api/v1/files stores a file (a task too); GET /api/v1/files lists the ones you may see; share one with PUT /api/v1/files/{file_id}/entitlements/{user_name}.',
  '- Errors: every 4xx and 5xx is application/problem+json (RFC 9457) with a stable `type` and, for a bad request, the parameters at fault; see components.schemas.Problem and the list below.',
  '- Something you may not see (a metric, a file, a task) answers 404, exactly as something that does not exist.',
  '',
  'Limits: every authenticated caller has a token bucket (MERIDIAN_RATE_LIMIT_BURST requests at once, refilled at MERIDIAN_RATE_LIMIT_PER_SECOND); every answer to it carries RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset and RateLimit-Policy, and over the limit it gets 429 /problems/rate-limited with Retry-After. A request that is not a streaming upload or download and takes longer than MERIDIAN_REQUEST_TIMEOUT_MS gets 503 /problems/timeout with Retry-After. JSON bodies of account and file-metadata requests are limited to MERIDIAN_MAX_SMALL_JSON_BODY_BYTES (413), the body of POST /api/v1/metrics/download to MERIDIAN_MAX_DOWNLOAD_BODY_BYTES (413), a download list to MERIDIAN_MAX_DOWNLOAD_NAMES names (400), and a series request to MERIDIAN_MAX_SERIES_POINTS buckets per metric and MERIDIAN_MAX_SERIES_PER_REQUEST metrics (400). A request target longer than MERIDIAN_MAX_URL_BYTES gets 414 /problems/uri-too-long (a download: send the same parameters as a POST body); a request line plus headers larger than MERIDIAN_MAX_HEADER_BYTES gets 431 /problems/header-too-large, a malformed request 400, and headers not received within MERIDIAN_HTTP_HEADERS_TIMEOUT_MS 408 /problems/request-timeout, each with Connection: close. A connection silent for MERIDIAN_HTTP_IDLE_TIMEOUT_MS, or whose request body arrives slower than MERIDIAN_HTTP_MIN_BODY_BYTES_PER_SECOND on average, is closed.',
  '',
  'Problem types: ' + (Object.keys(problemTypes) as ProblemType[]).map((p) => `${problemTypeUri(p)} (${problemTypes[p].status})`).join(', '),
].join('\n');

/** The OpenAPI 3.1 document of every route, built from the same schemas that validate requests. */
export function buildOpenApi(routes: readonly RouteDef[], version: string): Json {
  const paths: Record<string, Json> = {};
  for (const def of routes) {
    const params = parameters(def);
    const body = requestBody(def);
    (paths[def.path] ??= {})[def.method.toLowerCase()] = {
      operationId: def.operationId,
      summary: def.summary,
      ...(def.description ? { description: def.description } : {}),
      tags: [...def.tags],
      ...(def.auth === 'public' ? { security: [] } : {}),
      ...(params.length > 0 ? { parameters: params } : {}),
      ...(body ? { requestBody: body } : {}),
      responses: responses(def),
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Meridian metrics and files data service',
      version,
      description: `Meridian keeps metric points and files: upload them, chart and download them, share them. All paths of the API are under /api/v1.\n\n${intro}`,
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY>' } },
      schemas: { Problem: jsonSchema(problemSchema, 'output') },
    },
  };
}
