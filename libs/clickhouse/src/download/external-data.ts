import { randomBytes } from 'node:crypto';

/**
 * ClickHouse external data: temporary tables sent with the query as multipart/form-data
 * file parts, with `<name>_structure` and `<name>_format` as URL parameters. This is how
 * user strings (metric names, a cursor's name) reach SQL as data, never as SQL text.
 */
export type ExternalTable = {
  /** A trusted identifier, the table's name in SQL. */
  readonly name: string;
  /** Trusted column list, e.g. `name String`. */
  readonly structure: string;
  readonly rows: readonly (readonly string[])[];
};

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/** One TabSeparated field: backslash, tab and line breaks escaped as ClickHouse reads them. */
export function tsvField(value: string): string {
  return value.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

export function tsvRows(rows: readonly (readonly string[])[]): string {
  return rows.map((r) => `${r.map(tsvField).join('\t')}\n`).join('');
}

/** The URL parameters that describe the tables. */
export function externalTableParams(tables: readonly ExternalTable[]): [string, string][] {
  return tables.flatMap((t) => {
    if (!IDENTIFIER.test(t.name)) throw new Error(`not an external table name: ${t.name}`);
    return [
      [`${t.name}_structure`, t.structure],
      [`${t.name}_format`, 'TabSeparated'],
    ] as [string, string][];
  });
}

/** The request body and its content type. The boundary is random and checked against the content. */
export function multipartBody(tables: readonly ExternalTable[]): { body: Buffer; contentType: string } {
  const files = tables.map((t) => ({ name: t.name, data: Buffer.from(tsvRows(t.rows), 'utf8') }));
  let boundary: string;
  do boundary = `meridian-${randomBytes(12).toString('hex')}`;
  while (files.some((f) => f.data.includes(boundary)));
  const parts = files.flatMap((f) => [
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${f.name}"; filename="${f.name}"\r\n` + 'Content-Type: application/octet-stream\r\n\r\n',
    ),
    f.data,
    Buffer.from('\r\n'),
  ]);
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}
