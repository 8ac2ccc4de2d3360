// ESLint for `make lint` (run by `make test` before the tests). Three jobs:
//  1. TypeScript correctness the compiler does not see: typescript-eslint's type-aware
//     recommended set, with no-floating-promises (a promise nobody awaits loses its
//     rejection) and consistent-type-imports.
//  2. The architecture's boundaries (shared/ARCHITECTURE.md "Layout", issue 12):
//     libs never import apps; libs/domain, libs/projection and libs/protocols do no Node I/O;
//     no import cycles; only the adapter libs speak to kafkajs, minio and
//     @clickhouse/client; a workspace package imports only the workspace packages its
//     package.json declares, by name (never by a relative path into another package); the
//     ingest worker's components read no settings (they take their options).
//  3. Small functions: none over 120 lines in the apps and libs.
// Boundaries use eslint-plugin-import rather than dependency-cruiser: one tool, one pass and
// one Node API (a unit test lints deliberate violations through it), and its rules resolve
// each import (./eslint.resolver.cjs: as Node does), so a relative path cannot slip past them.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importPlugin from 'eslint-plugin-import';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const workspaces = ['apps', 'libs'].flatMap((dir) => readdirSync(dir).map((name) => `${dir}/${name}`));

// The adapters: the only code that may import the clients of Kafka, MinIO and ClickHouse.
// The apps reach them through ports they or libs/domain own; libs/platform (start-up work),
// libs/folds (the read models' folds), libs/replay (rebuilds, swaps) and libs/export (the log by
// ranges through the LogRanges port) use the adapters, not the clients.
const adapterLibs = ['libs/kafka', 'libs/clickhouse', 'libs/storage'];
const clientModules = ['kafkajs', 'minio', '@clickhouse/client'];

// libs/domain and libs/projection are pure: of Node's modules only these, which do no I/O.
const pureNodeModules = ['crypto', 'node:crypto', 'util', 'node:util', 'buffer', 'node:buffer'];

// A stream joined with .pipe() passes no error along: the source's failure is heard by no
// one (an unheard 'error' event ends the process) and the destination waits forever.
const noBarePipe = {
  selector: "CallExpression[callee.property.name='pipe'][arguments.length=1]",
  message: "stream.pipe() passes no error along: use pipeline() from node:stream (or for await), so every stream's error has an owner.",
};

// The ingest worker's components take their own options (each component's options.ts, compiled
// once in compose.ts), never the settings: reading `settings.X`, `x.settings` or destructuring
// `settings` is what this forbids. The composition (compose.ts, start.ts) and the options files
// compile them.
const settingsMessage = 'an ingest component takes its options (its options.ts, compiled in compose.ts), never the settings.';
const noSettingsInIngest = [
  { selector: "MemberExpression[object.name='settings']", message: settingsMessage },
  { selector: "MemberExpression[property.name='settings']", message: settingsMessage },
  { selector: "ObjectPattern > Property[key.name='settings']", message: settingsMessage },
];

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      '.var/**',
      'deploy/**',
      'schemas/**',
      'test/fixtures/**/*.json',
      'docs/.vitepress/dist/**',
      'docs/.vitepress/cache/**',
      'docs/.vitepress/generated/**',
    ],
  },
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // A leading underscore names what is deliberately unused (a destructured field left out).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Tuned off, each for what it reported here rather than in principle:
      // - no-unsafe-*: the `any`s come from Koa's ctx.state, avsc's decoded values and JSON.parse,
      //   narrowed where they enter (zod, casts); ~165 reports, all at those boundaries.
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // - require-await: async functions without await implement Promise-returning interfaces
      //   (handlers, fakes); the promise bugs that matter are no-floating/no-misused-promises'.
      '@typescript-eslint/require-await': 'off',
      // - unbound-method: kafkajs hands out closures (heartbeat, resolveOffset, commitOffsetsIfNecessary)
      //   typed as methods; destructuring them is how its API is used.
      '@typescript-eslint/unbound-method': 'off',
      // - no-base-to-string: String(unknown) is how logs and the CLI print decoded JSON fields.
      '@typescript-eslint/no-base-to-string': 'off',
    },
  },
  {
    // Tests assert on parsed JSON, build deliberately odd values and rethrow what a
    // background loop caught.
    files: ['**/*.test.ts', 'test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/only-throw-error': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
    },
  },
  {
    files: ['apps/**/*.ts', 'libs/**/*.ts'],
    plugins: { import: importPlugin },
    settings: {
      'import/resolver': { [fileURLToPath(new URL('./eslint.resolver.cjs', import.meta.url))]: {} },
      'import/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import/extensions': ['.ts', '.js'],
    },
    rules: {
      'no-restricted-syntax': ['error', noBarePipe],
      'import/no-cycle': ['error', { ignoreExternal: true }],
      'import/no-restricted-paths': [
        'error',
        {
          zones: [
            { target: './libs', from: './apps', message: 'libs never import apps.' },
            {
              target: './libs/domain',
              from: [...adapterLibs, 'libs/replay', 'libs/platform', 'libs/folds', 'libs/runtime'].map((dir) => `./${dir}`),
              message: 'libs/domain is pure: it imports no adapter (kafka, clickhouse, storage), nor replay, the platform, the folds or the runtime.',
            },
            {
              target: './libs/projection',
              from: [...adapterLibs, 'libs/replay', 'libs/platform', 'libs/folds', 'libs/runtime'].map((dir) => `./${dir}`),
              message: "libs/projection is pure: the points sink that writes its blocks is libs/clickhouse's.",
            },
            {
              target: './apps/api',
              from: './libs/replay',
              message: "the api does not import libs/replay (rebuilds and swaps are the CLI's): the events export it serves is libs/export.",
            },
          ],
        },
      ],
      'no-restricted-imports': [
        'error',
        {
          paths: clientModules.map((name) => ({
            name,
            message: `only the adapter libs (${adapterLibs.join(', ')}) import ${name}: use a port they provide.`,
          })),
        },
      ],
    },
  },
  {
    // No function over 120 lines in the apps and libs, so each has one job a reader can hold.
    // Blank lines and comments are not counted: a comment saying why must never be what pushes
    // a function over, nor a blank line between its steps. Test files are left out: a describe's
    // callback is a list of cases, not a function with logic of its own.
    files: ['apps/**/*.ts', 'libs/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 120, skipBlankLines: true, skipComments: true, IIFEs: true }] },
  },
  {
    // Overrides the rule above for these files, so it repeats the pipe check.
    files: ['apps/ingest/src/**/*.ts'],
    ignores: ['**/*.test.ts', 'apps/ingest/src/compose.ts', 'apps/ingest/src/start.ts', 'apps/ingest/src/**/options.ts'],
    rules: { 'no-restricted-syntax': ['error', noBarePipe, ...noSettingsInIngest] },
  },
  {
    files: adapterLibs.map((dir) => `${dir}/**/*.ts`),
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    files: ['libs/domain/**/*.ts', 'libs/projection/src/**/*.ts'],
    rules: { 'import/no-nodejs-modules': ['error', { allow: pureNodeModules }] },
  },
  {
    // The protocol decoders are pure (their tests read the .proto files they encode with).
    files: ['libs/protocols/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: { 'import/no-nodejs-modules': ['error', { allow: pureNodeModules }] },
  },
  {
    // Their one module with zlib is the bounded gunzip helper the routes call before a
    // decoder, so the decoders themselves take bytes.
    files: ['libs/protocols/src/gunzip.ts'],
    rules: { 'import/no-nodejs-modules': ['error', { allow: [...pureNodeModules, 'zlib', 'node:zlib'] }] },
  },
  // Each workspace package imports another only by name and only when its package.json
  // declares it (the test files beside the code may also use the root's dev dependencies).
  ...workspaces.map((dir) => ({
    files: [`${dir}/**/*.ts`],
    ignores: ['**/*.test.ts'],
    rules: {
      'import/no-extraneous-dependencies': ['error', { packageDir: [dir, '.'], includeInternal: true }],
      'import/no-relative-packages': 'error',
    },
  })),
);
