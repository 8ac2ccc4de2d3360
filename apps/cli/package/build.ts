/**
 * Builds the `meridian` command as an npm package that installs anywhere, without this
 * repository: `npm install -g meridian-cli-<version>.tgz` (or `--prefix DIR`) puts `meridian`
 * on the PATH. The CLI and the workspace libraries it uses are bundled by esbuild into one
 * ES module (bin/meridian.mjs): the libraries are TypeScript that only this repository's Node
 * runs, and a bundle needs no install step of its own. Runs on Node 22 or later.
 *
 *   node apps/cli/package/build.ts [OUT_DIR]   (make cli-package: OUT_DIR .var/cli-package)
 * Prints the path of the .tgz it wrote.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const out = resolve(process.argv[2] ?? join(repo, '.var/cli-package'));
const { version } = JSON.parse(readFileSync(join(repo, 'apps/cli/package.json'), 'utf8')) as { version: string };
const stage = join(out, 'package');

rmSync(stage, { recursive: true, force: true });
mkdirSync(join(stage, 'bin'), { recursive: true });
await build({
  entryPoints: [join(repo, 'apps/cli/src/main.ts')],
  outfile: join(stage, 'bin/meridian.mjs'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  // kafkajs (CommonJS) requires Node's built-ins: an ES module bundle gives it a require of its own.
  banner: { js: "#!/usr/bin/env node\nimport { createRequire as __meridianRequire } from 'node:module';\nconst require = __meridianRequire(import.meta.url);" },
  // kafkajs' checksum tries this native module and falls back to its own code when it is absent.
  external: ['@node-rs/crc32'],
  // The event codec reads every Avro schema from schemas/, which the package carries beside bin/.
  plugins: [
    {
      name: 'schemas-beside-bin',
      setup(b) {
        b.onLoad({ filter: /libs\/events\/src\/registry\.ts$/ }, (args) => {
          const source = readFileSync(args.path, 'utf8');
          const inRepo = "new URL('../../../schemas/', import.meta.url)";
          if (!source.includes(inRepo)) throw new Error(`${args.path} no longer finds schemas/ as ${inRepo}: update this plugin`);
          return { contents: source.replace(inRepo, "new URL('../schemas/', import.meta.url)"), loader: 'ts' };
        });
      },
    },
  ],
  logLevel: 'warning',
});
cpSync(join(repo, 'schemas'), join(stage, 'schemas'), { recursive: true });
chmodSync(join(stage, 'bin/meridian.mjs'), 0o755);
writeFileSync(
  join(stage, 'package.json'),
  `${JSON.stringify(
    {
      name: 'meridian-cli',
      version,
      description: 'The meridian command: upload, download, tasks, files and the admin commands of a Meridian service',
      type: 'module',
      bin: { meridian: 'bin/meridian.mjs' },
      engines: { node: '>=22' },
      license: 'UNLICENSED',
    },
    null,
    2,
  )}\n`,
);
writeFileSync(join(stage, 'README.md'), readFileSync(join(repo, 'apps/cli/README.md')));
const tgz = execFileSync('npm', ['pack', '--silent', '--pack-destination', out], { cwd: stage, encoding: 'utf8' }).trim().split('\n').at(-1)!;
console.log(join(out, tgz));
