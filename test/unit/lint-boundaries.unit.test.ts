import { describe, expect, it } from 'vitest';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

/**
 * The boundary rules of eslint.config.js, run through ESLint's Node API on source text placed
 * at a path inside the workspace (nothing is written). Type information is left out (a file
 * that does not exist has none, and the boundary rules need none); so is the cycle rule's
 * strongly-connected-components shortcut, which assumes the file is on disk.
 */
const eslint = new ESLint({
  cwd: new URL('../..', import.meta.url).pathname,
  overrideConfig: [
    { files: ['**/*.ts'], ...tseslint.configs.disableTypeChecked, languageOptions: { parserOptions: { projectService: false } } },
    { files: ['apps/**/*.ts', 'libs/**/*.ts'], rules: { 'import/no-cycle': ['error', { ignoreExternal: true, disableScc: true }] } },
  ],
});

async function rulesBroken(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return [...new Set(result!.messages.map((m) => m.ruleId ?? `fatal: ${m.message}`))].sort();
}

// Each case runs ESLint with its plugins and resolver: CPU-bound seconds on a loaded 2-core
// machine (the first loads them), not a timing assertion.
describe('lint: boundaries', { timeout: 30_000 }, () => {
  it('libs/domain importing an adapter lib fails', async () => {
    expect(await rulesBroken('libs/domain/src/x.ts', "import { appendEvents } from '@meridian/kafka';\nexport const append = appendEvents;\n")).toEqual([
      'import/no-extraneous-dependencies',
      'import/no-restricted-paths',
    ]);
  });

  it('libs/domain doing Node I/O fails; a pure Node module passes', async () => {
    expect(await rulesBroken('libs/domain/src/x.ts', "import { readFileSync } from 'node:fs';\nexport const read = readFileSync;\n")).toEqual([
      'import/no-nodejs-modules',
    ]);
    expect(await rulesBroken('libs/domain/src/x.ts', "import { createHash } from 'node:crypto';\nexport const hash = createHash;\n")).toEqual([]);
  });

  it('libs/protocols doing Node I/O fails; only its gunzip helper may use zlib', async () => {
    expect(await rulesBroken('libs/protocols/src/x.ts', "import { readFileSync } from 'node:fs';\nexport const read = readFileSync;\n")).toEqual([
      'import/no-nodejs-modules',
    ]);
    expect(await rulesBroken('libs/protocols/src/x.ts', "import { gunzip } from 'node:zlib';\nexport const g = gunzip;\n")).toEqual([
      'import/no-nodejs-modules',
    ]);
    expect(await rulesBroken('libs/protocols/src/gunzip.ts', "import { gunzip } from 'node:zlib';\nexport const g = gunzip;\n")).toEqual([]);
  });

  it('a lib importing an app fails, by name or by relative path', async () => {
    expect(await rulesBroken('libs/kafka/src/x.ts', "import { x } from '@meridian/api';\nexport const y = x;\n")).toContain('import/no-restricted-paths');
    expect(await rulesBroken('libs/kafka/src/x.ts', "import { x } from '../../../apps/api/src/main.ts';\nexport const y = x;\n")).toEqual([
      'import/no-relative-packages',
      'import/no-restricted-paths',
    ]);
  });

  it('the api importing libs/replay fails; the CLI may', async () => {
    expect(await rulesBroken('apps/api/src/x.ts', "import { swapIn } from '@meridian/replay';\nexport const s = swapIn;\n")).toEqual([
      'import/no-extraneous-dependencies',
      'import/no-restricted-paths',
    ]);
    expect(await rulesBroken('apps/cli/src/x.ts', "import { swapIn } from '@meridian/replay';\nexport const s = swapIn;\n")).toEqual([]);
  });

  it('an app importing a client library fails unless it is an adapter lib', async () => {
    expect(await rulesBroken('apps/api/src/x.ts', "import { Kafka } from 'kafkajs';\nexport const k = Kafka;\n")).toEqual(['no-restricted-imports']);
    expect(await rulesBroken('apps/ingest/src/x.ts', "import { Client } from 'minio';\nexport const c = Client;\n")).toEqual(['no-restricted-imports']);
    expect(await rulesBroken('libs/kafka/src/x.ts', "import { Kafka } from 'kafkajs';\nexport const k = Kafka;\n")).toEqual([]);
  });

  it('an app importing a client only for its types fails too, and so do libs/platform (it composes adapters, not clients) and libs/folds', async () => {
    expect(await rulesBroken('apps/ingest/src/x.ts', "import type { Transaction } from 'kafkajs';\nexport type T = Transaction;\n")).toEqual([
      'no-restricted-imports',
    ]);
    expect(await rulesBroken('libs/platform/src/x.ts', "import type { Producer } from 'kafkajs';\nexport type P = Producer;\n")).toEqual([
      'no-restricted-imports',
    ]);
    expect(
      await rulesBroken('libs/platform/src/x.ts', "import type { ClickHouseClient } from '@clickhouse/client';\nexport type C = ClickHouseClient;\n"),
    ).toEqual(['no-restricted-imports']);
    expect(await rulesBroken('libs/folds/src/x.ts', "import type { Producer } from 'kafkajs';\nexport type P = Producer;\n")).toEqual([
      'no-restricted-imports',
    ]);
  });

  it('an ingest component reading the settings fails; the composition and an options file may; the points projector too is a component', async () => {
    const reads = [
      'export const f = (settings: { A: number }) => settings.A;\n',
      'export const f = (ingest: { settings: { A: number } }) => ingest.settings.A;\n',
      'export const f = ({ settings }: { settings: { A: number } }) => settings;\n',
    ];
    for (const code of reads) {
      expect(await rulesBroken('apps/ingest/src/files/x.ts', code), code).toEqual(['no-restricted-syntax']);
      expect(await rulesBroken('apps/ingest/src/compose.ts', code), code).toEqual([]);
      expect(await rulesBroken('apps/ingest/src/files/options.ts', code), code).toEqual([]);
      expect(await rulesBroken('apps/ingest/src/projector/x.ts', code), code).toEqual(['no-restricted-syntax']);
      expect(await rulesBroken('apps/ingest/src/projector/options.ts', code), code).toEqual([]);
    }
    expect(await rulesBroken('apps/ingest/src/files/x.ts', 'export const f = (options: { a: number }) => options.a;\n')).toEqual([]);
    // The rule replaces the apps' no-restricted-syntax there: the bare pipe() check still holds.
    expect(await rulesBroken('apps/ingest/src/files/x.ts', 'export const f = (a: NodeJS.ReadableStream, b: NodeJS.WritableStream) => a.pipe(b);\n')).toEqual([
      'no-restricted-syntax',
    ]);
  });

  it('an import cycle fails', async () => {
    // libs/domain/src/index.ts re-exports errors.ts: errors.ts importing the index closes a cycle.
    expect(await rulesBroken('libs/domain/src/errors.ts', "import { taskTransitions } from './index.ts';\nexport const t = taskTransitions;\n")).toEqual([
      'import/no-cycle',
    ]);
  });

  it('a workspace package importing one its package.json does not declare fails', async () => {
    // libs/events declares no workspace dependency.
    expect(await rulesBroken('libs/events/src/x.ts', "import { DomainError } from '@meridian/domain';\nexport const e = DomainError;\n")).toEqual([
      'import/no-extraneous-dependencies',
    ]);
    expect(await rulesBroken('libs/clickhouse/src/x.ts', "import { DomainError } from '@meridian/domain';\nexport const e = DomainError;\n")).toEqual([]);
  });
});

/** A function of `statements` one-line statements, with `padding` comment and blank lines between them. */
function functionOf(statements: number, padding = 0): string {
  const body = Array.from({ length: statements }, (_, i) => `  n += ${i};${i < padding ? '\n  // why\n' : ''}`).join('\n');
  return `export function f(): number {\n  let n = 0;\n${body}\n  return n;\n}\n`;
}

describe('lint: function length', { timeout: 30_000 }, () => {
  // functionOf(n) spans n + 4 lines: its declaration, `let`, n statements, `return` and the brace.
  it('a function over 120 lines in libs or apps fails; one of 120 passes', async () => {
    expect(await rulesBroken('libs/domain/src/x.ts', functionOf(116))).toEqual([]);
    expect(await rulesBroken('libs/domain/src/x.ts', functionOf(117))).toEqual(['max-lines-per-function']);
    expect(await rulesBroken('apps/ingest/src/x.ts', functionOf(117))).toEqual(['max-lines-per-function']);
  });

  it("comments and blank lines do not count, nor do test files' describe callbacks", async () => {
    expect(await rulesBroken('libs/domain/src/x.ts', functionOf(116, 50))).toEqual([]);
    expect(await rulesBroken('libs/domain/src/x.unit.test.ts', functionOf(200))).toEqual([]);
  });
});
