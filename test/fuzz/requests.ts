import { otlpGaugeBody, remoteWriteBody } from '../support/protocol-bodies.ts';

/** When the telemetry bodies' points are (2024-01-01T00:00:00Z). */
const T0 = Date.UTC(2024, 0, 1);

/**
 * A valid request for every operation of the served OpenAPI document, as bytes on the wire:
 * path parameters filled with ids the test created, query parameters from their schemas
 * (enum, examples) or from KNOWN_QUERY, and bodies in every content type the document names
 * (from BODIES; an operation with a body or a required parameter this file cannot fill is an
 * error, so a new route cannot go unfuzzed). Some operations get more than one variant: the
 * file upload as multipart with several parts and as a raw body, small and large.
 */

export type Part = { readonly headers: readonly string[]; readonly data: Buffer };
export type Multipart = { readonly boundary: string; readonly parts: readonly Part[] };

export type Req = {
  readonly method: string;
  readonly target: string;
  readonly version: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Buffer;
  /** The body's structure when it is multipart, for the mutations that mangle its framing. */
  readonly multipart: Multipart | null;
};

export type Who = 'public' | 'user' | 'admin';

export type Variant = {
  /** `METHOD /path` as in the document. */
  readonly route: string;
  readonly operationId: string;
  /** What the body is: "no body", "application/json", "multipart: field, file, fields (256 KiB)". */
  readonly name: string;
  /** A body past two storage parts: cut and aborted at a few offsets only, and not mangled (the smaller variants are). */
  readonly huge: boolean;
  /** Whose key it is sent with: public routes none; the fuzzing user's, or the admin's where the user's is refused 403. */
  who: Who;
  /** The valid request, sent with this key. */
  readonly req: (key: string | null) => Req;
};

/** What the test created for the path parameters to name. */
export type Fixtures = {
  readonly host: string;
  /** A metric with points, readable and writable by the fuzzing user. */
  readonly metric: string;
  /** A file of the fuzzing user, shared, described and downloaded. */
  readonly fileId: string;
  /** A file of the fuzzing user that DELETE /api/v1/files/{file_id} removes. */
  readonly doomedFileId: string;
  readonly taskId: string;
  /** A key of the fuzzing user that DELETE /api/v1/api_keys/{key_id} revokes (never the one it sends). */
  readonly spareKeyId: string;
  /** Users the admin routes act on: the fuzzing user and the admin are never disabled or changed. */
  readonly shareWith: string;
  readonly subject: string;
  readonly victim: string;
};

type OpenApi = { paths: Record<string, Record<string, Operation>> };
type Operation = {
  operationId: string;
  security?: unknown[];
  parameters?: Array<{ name: string; in: 'query' | 'path' | 'header'; required: boolean; schema: Schema }>;
  requestBody?: { content: Record<string, { schema: Schema }> };
};
type Schema = { enum?: unknown[]; examples?: unknown[]; default?: unknown; type?: string };

const CRLF = '\r\n';
/** The large variants: big enough that the body crosses many socket reads and storage writes. */
const LARGE_BYTES = 256 * 1024;
/**
 * The huge variants: past two parts of a staged multipart upload (the test sets
 * MERIDIAN_STORAGE_PART_BYTES to its 5 MiB minimum), so a cut or abort there leaves parts in the
 * bucket unless the api aborts the upload.
 */
export const HUGE_BYTES = 12 * 1024 * 1024;

/** Good values of query parameters the schemas give no example for, by name (and operation, where they differ). */
function knownQuery(op: string, name: string, f: Fixtures): string | undefined {
  const byName: Record<string, string> = {
    metrics: f.metric,
    metric_name: f.metric,
    start_date: '2024-01-01',
    end_date: '2024-01-02',
    max_rows: '100',
    max_events: '10',
    name_contains: 'fuzz',
    wait: '0',
    limit: '10',
  };
  if (op.startsWith('prometheus')) {
    const prometheus: Record<string, string> = {
      query: 'rate(fuzz_requests_total[5m])',
      time: '1704067200',
      start: '1704067200',
      end: '1704070800',
      step: '60',
      'match[]': 'fuzz_requests_total',
    };
    if (name in prometheus) return prometheus[name];
  }
  if (op === 'exportEvents' && name === 'format') return 'ndjson';
  if (op === 'listMetrics' && name === 'metrics') return 'fuzz.';
  if (op === 'listMetrics' && name === 'pattern') return 'starts_with';
  if (op === 'removeRetentionRule' && name === 'value') return 'fuzz_none.';
  return byName[name];
}

/** Optional query parameters left out: opaque cursors and positions no valid first request has. */
const LEFT_OUT = new Set(['cursor', 'after', 'from', 'to', 'types']);

function pathValue(op: string, name: string, f: Fixtures, schema: Schema): string {
  switch (name) {
    case 'file_id':
      return op === 'deleteFile' ? f.doomedFileId : f.fileId;
    case 'task_id':
      return f.taskId;
    case 'name':
      if (op === 'prometheusLabelValues') return 'job';
      break;
    case 'key_id':
      return f.spareKeyId;
    case 'user_name':
      if (op === 'shareFile' || op === 'unshareFile') return f.shareWith;
      if (op === 'disableUser') return f.victim;
      return f.subject;
    default: {
      const example = schema.examples?.[0];
      if (typeof example === 'string') return example;
    }
  }
  throw new Error(`${op}: no value for the path parameter ${name}`);
}

function queryValue(op: string, name: string, f: Fixtures, schema: Schema, required: boolean): string | undefined {
  const known = knownQuery(op, name, f);
  if (known !== undefined) return known;
  if (!required && LEFT_OUT.has(name)) return undefined;
  const fromSchema = schema.examples?.[0] ?? schema.enum?.[0] ?? schema.default;
  if (fromSchema !== undefined) return String(fromSchema);
  if (required) throw new Error(`${op}: no value for the required query parameter ${name}`);
  return undefined;
}

function csv(bytes: number): Buffer {
  const lines: string[] = ['timestamp,value'];
  let size = 16;
  for (let i = 0; size < bytes; i++) {
    const line = `${new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString().replace('.000Z', 'Z')},${i}`;
    lines.push(line);
    size += line.length + 1;
  }
  return Buffer.from(`${lines.join('\n')}\n`);
}

function jsonValues(metric: string, count: number): Buffer {
  const values = Array.from({ length: count }, (_, i) => ({
    timestamp: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString().replace('.000Z', 'Z'),
    value: i,
  }));
  return Buffer.from(JSON.stringify({ metric_name: metric, values }));
}

export function field(name: string, value: string): Part {
  return { headers: [`Content-Disposition: form-data; name="${name}"`], data: Buffer.from(value) };
}

export function filePart(name: string, filename: string, type: string, data: Buffer): Part {
  return { headers: [`Content-Disposition: form-data; name="${name}"; filename="${filename}"`, `Content-Type: ${type}`], data };
}

export function multipartBytes(m: Multipart): Buffer {
  const out: Buffer[] = [];
  for (const p of m.parts) out.push(Buffer.from(`--${m.boundary}${CRLF}${p.headers.join(CRLF)}${CRLF}${CRLF}`, 'latin1'), p.data, Buffer.from(CRLF));
  out.push(Buffer.from(`--${m.boundary}--${CRLF}`));
  return Buffer.concat(out);
}

type Body = { readonly name: string; readonly contentType: string; readonly body: Buffer; readonly multipart?: Multipart; readonly huge?: boolean };

const BOUNDARY = 'fuzz-boundary-5c1e0a';
function multipart(name: string, parts: Part[], huge = false): Body {
  const m = { boundary: BOUNDARY, parts };
  return { name, contentType: `multipart/form-data; boundary=${BOUNDARY}`, body: multipartBytes(m), multipart: m, huge };
}

/**
 * The valid bodies of each operation, by the content type the document names; `extra` are
 * bodies the route's description allows beyond its documented content types.
 */
function bodies(op: string, contentType: string, f: Fixtures): Body[] {
  const small = csv(120);
  const huge = () => csv(HUGE_BYTES);
  const large = csv(LARGE_BYTES);
  const jsonSmall = jsonValues(f.metric, 3);
  const json = (value: unknown): Body[] => [{ name: contentType, contentType, body: Buffer.from(JSON.stringify(value)) }];
  switch (`${op} ${contentType}`) {
    case 'uploadMetricsJson application/json':
      return [
        { name: 'application/json', contentType, body: jsonSmall },
        { name: 'application/json (64 KiB)', contentType, body: jsonValues(f.metric, 1400) },
      ];
    case 'uploadMetricsJson multipart/form-data':
      return [
        // The seed's sample request: declared multipart, the JSON text as the body.
        { name: 'declared multipart, JSON text as the body', contentType: `multipart/form-data; boundary=${BOUNDARY}`, body: jsonSmall },
        multipart('multipart: JSON file part, then a field', [filePart('file', 'values.json', 'application/json', jsonSmall), field('note', 'after the JSON')]),
      ];
    case 'uploadMetricsFile multipart/form-data':
      return [
        multipart('multipart: field, file, field', [
          field('note', 'before the file'),
          filePart('file', 'points.csv', 'text/csv', small),
          field('comment', 'after the file'),
        ]),
        // The file part last: a body cut or left open inside it reaches the staging stream.
        multipart(`multipart: field, file (${LARGE_BYTES / 1024} KiB)`, [field('note', 'before the file'), filePart('file', 'points.csv', 'text/csv', large)]),
      ];
    case 'uploadMetricsFile extra':
      return [
        { name: 'raw body, text/csv', contentType: 'text/csv', body: small },
        { name: `raw body, application/octet-stream (${LARGE_BYTES / 1024} KiB)`, contentType: 'application/octet-stream', body: large },
        { name: `raw body, text/csv (${HUGE_BYTES >> 20} MiB)`, contentType: 'text/csv', body: huge(), huge: true },
      ];
    case 'defineFile multipart/form-data':
    case 'defineFileAtFiles multipart/form-data': {
      const parts = (data: Buffer) => [
        field('file_description', 'defined by the fuzz tier'),
        filePart('file', 'fuzz.csv', 'text/csv', data),
        field('file_size_limit', '10000000'),
        field('enforce_schema', 'false'),
      ];
      return [
        multipart('multipart: field, file, fields', parts(small)),
        ...(op === 'defineFileAtFiles'
          ? [
              multipart(`multipart: field, file, fields (${LARGE_BYTES / 1024} KiB)`, parts(large)),
              multipart(
                `multipart: field, file (${HUGE_BYTES >> 20} MiB)`,
                [field('file_description', 'a huge file of the fuzz tier'), filePart('file', 'huge.csv', 'text/csv', huge())],
                true,
              ),
            ]
          : []),
      ];
    }
    case 'downloadMetricsPost application/x-www-form-urlencoded':
      return [{ name: contentType, contentType, body: Buffer.from(new URLSearchParams({ metrics: f.metric, max_rows: '100', format: 'csv' }).toString()) }];
    case 'prometheusQueryPost application/x-www-form-urlencoded':
    case 'prometheusQueryRangePost application/x-www-form-urlencoded':
    case 'prometheusSeriesPost application/x-www-form-urlencoded':
    case 'prometheusLabelsPost application/x-www-form-urlencoded':
    case 'prometheusQueryExemplarsPost application/x-www-form-urlencoded': {
      const form = {
        query: 'sum by (job) (rate(fuzz_requests_total[5m]))',
        time: '1704067200',
        start: '1704067200',
        end: '1704070800',
        step: '60',
        'match[]': 'fuzz_requests_total',
      };
      return [{ name: contentType, contentType, body: Buffer.from(new URLSearchParams(form).toString()) }];
    }
    case 'downloadMetricsPost application/json':
      return json({ metrics: [f.metric], max_rows: 100, latest_only: true });
    // The telemetry protocols, under names the fuzzing user may write (fuzz_*).
    case 'prometheusRemoteWrite application/x-protobuf':
    case 'prometheusRemoteWrite application/octet-stream':
      return [
        {
          name: `snappy protobuf as ${contentType}`,
          contentType,
          body: remoteWriteBody([
            {
              labels: [
                ['__name__', 'fuzz_rw'],
                ['job', 'fuzz'],
              ],
              samples: [
                [T0, 1.5],
                [T0 + 1000, 2.5],
              ],
            },
          ]),
        },
      ];
    case 'otlpMetrics application/x-protobuf':
    case 'otlpMetricsUnderApi application/x-protobuf':
      return [{ name: contentType, contentType, body: otlpGaugeBody('fuzz_otlp', 'fuzz', T0, 3.25, 'protobuf') }];
    case 'otlpMetrics application/json':
    case 'otlpMetricsUnderApi application/json':
      return [{ name: contentType, contentType, body: otlpGaugeBody('fuzz_otlp', 'fuzz', T0, 3.25, 'json') }];
    case 'influxWriteV1 text/plain':
    case 'influxWriteV2 text/plain':
      return [{ name: 'line protocol', contentType, body: Buffer.from(`fuzz_lp,host=a value=1.5 ${T0}000000\nfuzz_lp,host=b value=2i ${T0 + 1000}000000\n`) }];
    case 'describeFile application/json':
      return json({ file_description: 'described by the fuzz tier' });
    case 'shareFile application/json':
      return json({ access: 'r' });
    case 'createUser application/json':
      return json({ user_name: 'fuzz-made' });
    case 'replaceEntitlements application/json':
      return json({ metrics: [{ match: 'prefix', value: 'fuzz.', access: 'r' }] });
    case 'setFileQuota application/json':
      return json({ quota_bytes: 50_000_000 });
    // A range that holds none of the fixtures' points, and a rule for metrics nobody writes: the other routes' data stays.
    case 'deleteMetricPoints application/json':
      return json({ metrics: f.metric, start_date: '1999-01-01', end_date: '1999-01-01', reason: 'the fuzz tier' });
    case 'setRetentionRule application/json':
      return json({ match: 'prefix', value: 'fuzz_none.', days: 365 });
    default:
      if (contentType === 'extra') return [];
      throw new Error(`${op}: no valid body for ${contentType}`);
  }
}

/** Headers the document names that get a variant of their own, with a valid value. */
const HEADER_VARIANTS: Record<string, (op: string) => Record<string, string>> = {
  // One key per operation: a key is the user's, across routes, and another upload under it is a 409.
  'idempotency-key': (op) => ({ 'Idempotency-Key': `fuzz-${op}` }),
  range: () => ({ Range: 'bytes=0-15' }),
};

/** Every variant of every operation in the document. */
export function variantsOf(doc: OpenApi, f: Fixtures): Variant[] {
  const out: Variant[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const id = op.operationId;
      const params = op.parameters ?? [];
      let target = path.replace(/\{(\w+)\}/g, (_m, name: string) =>
        encodeURIComponent(pathValue(id, name, f, params.find((p) => p.name === name)?.schema ?? {})),
      );
      const query = new URLSearchParams();
      for (const p of params.filter((q) => q.in === 'query')) {
        const value = queryValue(id, p.name, f, p.schema, p.required);
        if (value !== undefined) query.set(p.name, value);
      }
      if ([...query].length > 0) target += `?${query.toString()}`;
      const route = `${method.toUpperCase()} ${path}`;
      const who: Who = op.security?.length === 0 ? 'public' : 'user';
      const make = (name: string, body: Body | null, extraHeaders: Record<string, string> = {}): Variant => ({
        route,
        operationId: id,
        name,
        huge: body?.huge === true,
        who,
        req: (key) => ({
          method: method.toUpperCase(),
          target,
          version: 'HTTP/1.1',
          headers: [
            ['Host', f.host],
            ...(key ? [['Authorization', `Bearer ${key}`] as const] : []),
            ...Object.entries(extraHeaders),
            ...(body ? [['Content-Type', body.contentType] as const, ['Content-Length', String(body.body.length)] as const] : []),
            ['Connection', 'close'],
          ],
          body: body?.body ?? Buffer.alloc(0),
          multipart: body?.multipart ?? null,
        }),
      });
      const contentTypes = Object.keys(op.requestBody?.content ?? {});
      const all = [...contentTypes.flatMap((ct) => bodies(id, ct, f)), ...bodies(id, 'extra', f)];
      if (contentTypes.length === 0) out.push(make('no body', null));
      for (const body of all) out.push(make(body.name, body));
      for (const p of params.filter((q) => q.in === 'header')) {
        const headers = HEADER_VARIANTS[p.name]?.(id);
        if (!headers) continue;
        const body = all.find((b) => !b.multipart && b.body.length < 4096) ?? null;
        out.push(make(`${body ? `${body.name}, ` : ''}${Object.keys(headers).join(', ')} header`, body, headers));
      }
    }
  }
  return out;
}

export function serialize(req: Req): Buffer {
  const head = `${req.method} ${req.target} ${req.version}${CRLF}${req.headers.map(([n, v]) => `${n}: ${v}${CRLF}`).join('')}${CRLF}`;
  return Buffer.concat([Buffer.from(head, 'latin1'), req.body]);
}

/** Length of the request line and headers, up to and with the blank line. */
export function headLength(bytes: Buffer): number {
  const end = bytes.indexOf('\r\n\r\n');
  return end < 0 ? bytes.length : end + 4;
}
