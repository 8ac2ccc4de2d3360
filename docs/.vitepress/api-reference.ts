// Renders the api's OpenAPI document as Markdown for the docs site's API reference:
//   node docs/.vitepress/api-reference.ts [OUT]   (`make docs` runs it before the build)
// The document is built from the routes themselves, as GET /api/v1/openapi.json serves it,
// on inert dependencies: no Kafka, ClickHouse or MinIO is needed. OUT defaults to
// docs/.vitepress/generated/api-operations.md (git-ignored), which docs/reference/api.md includes.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { API_VERSION, apiRoutes } from '../../apps/api/src/app.ts';
import { buildOpenApi } from '../../apps/api/src/openapi/document.ts';
import { inertApiDeps } from '../../apps/api/src/openapi/inert-deps.ts';

type Schema = {
  type?: string | string[];
  enum?: unknown[];
  format?: string;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  $ref?: string;
  const?: unknown;
};
type Parameter = { name: string; in: string; required?: boolean; description?: string; schema?: Schema };
type Response = { description: string; content?: Record<string, unknown>; headers?: Record<string, { description?: string }> };
type Operation = {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security?: unknown[];
  parameters?: Parameter[];
  requestBody?: { description?: string; content: Record<string, unknown> };
  responses: Record<string, Response>;
};
type Document = { info: { version: string }; paths: Record<string, Record<string, Operation>> };

const RATE_LIMIT_HEADERS = new Set(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy']);

/** Text that VitePress reads as Markdown inside a Vue template: no tags, no mustaches, no table breaks. */
function text(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\{\{/g, '&#123;&#123;');
}

function cell(s: string): string {
  return text(s).replace(/\|/g, '\\|').replace(/\n+/g, ' ');
}

function typeOf(schema: Schema | undefined): string {
  if (!schema) return '';
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' \\| ');
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return alternatives.map(typeOf).filter(Boolean).join(' or ');
  if (schema.type === 'array') return `array of ${typeOf(schema.items) || 'any'}`;
  const type = Array.isArray(schema.type) ? schema.type.join(' or ') : (schema.type ?? '');
  return schema.format ? `${type} (${schema.format})` : type;
}

function operationMarkdown(method: string, path: string, op: Operation): string[] {
  const out = [`### ${method.toUpperCase()} ${path} {#${op.operationId}}`, '', text(op.summary)];
  if (op.description) out.push('', text(op.description));
  out.push(
    '',
    `Operation \`${op.operationId}\`; ${op.security && op.security.length === 0 ? 'no API key needed' : 'needs an API key (`Authorization: Bearer …`)'}.`,
  );
  if (op.parameters?.length) {
    out.push('', '| parameter | in | type | required | meaning |', '|---|---|---|---|---|');
    for (const p of op.parameters) {
      out.push(`| \`${p.name}\` | ${p.in} | ${cell(typeOf(p.schema))} | ${p.required ? 'yes' : 'no'} | ${cell(p.description ?? '')} |`);
    }
  }
  if (op.requestBody) {
    out.push(
      '',
      `Body: ${Object.keys(op.requestBody.content)
        .map((t) => `\`${t}\``)
        .join(', ')}${op.requestBody.description ? `. ${text(op.requestBody.description)}` : ''}`,
    );
  }
  out.push('', '| status | answer | content | headers |', '|---|---|---|---|');
  for (const [status, r] of Object.entries(op.responses)) {
    const headers = Object.keys(r.headers ?? {}).filter((h) => !RATE_LIMIT_HEADERS.has(h));
    out.push(
      `| ${status} | ${cell(r.description)} | ${Object.keys(r.content ?? {})
        .map((t) => `\`${t}\``)
        .join(', ')} | ${headers.map((h) => `\`${h}\``).join(', ')} |`,
    );
  }
  out.push('');
  return out;
}

/** The operations of the document, grouped by their first tag in the order the tags first appear. */
export function apiReferenceMarkdown(doc: Document): string {
  const byTag = new Map<string, string[]>();
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const tag = op.tags[0] ?? 'other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push(...operationMarkdown(method, path, op));
    }
  }
  const out = [`<!-- Generated from the OpenAPI document (version ${doc.info.version}) by docs/.vitepress/api-reference.ts: do not edit. -->`, ''];
  for (const [tag, lines] of byTag) out.push(`## ${tag.charAt(0).toUpperCase()}${tag.slice(1)} {#tag-${tag.replace(/\W+/g, '-')}}`, '', ...lines);
  return out.join('\n');
}

export function apiDocument(): Document {
  return buildOpenApi(apiRoutes(inertApiDeps()), API_VERSION) as unknown as Document;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const target = process.argv[2] ?? fileURLToPath(new URL('./generated/api-operations.md', import.meta.url));
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, apiReferenceMarkdown(apiDocument()));
  console.log(`api reference written to ${target}`);
}
