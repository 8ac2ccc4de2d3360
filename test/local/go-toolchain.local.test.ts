import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * deploy/local/install.sh on a machine without Go: with a PATH that hides `go`, into a temporary
 * cache, the Go toolchain comes from the Go module proxy (76 MB, checked against its go.sum hash),
 * and go_install builds a Go program with it. The program is golang.org/x/example/hello (one
 * small module, no dependencies, seconds to build): MinIO (about 6 minutes on 2 cores) and helm
 * are built by the same go_install, too heavy to build again in a test. Needs the Go module proxy.
 */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const HELLO = 'golang.org/x/example/hello@v0.0.0-20250915201037-7f05d217867b';
const goVersion = spawnSync('bash', ['-c', 'source deploy/local/lib.sh && printf %s "$GO_TOOLCHAIN_VERSION"'], { cwd: repoRoot, encoding: 'utf8' }).stdout;

let cache: string;
let noGoPath: string;
const timings: string[] = [];

function run(script: string, args: string[], extraEnv: Record<string, string> = {}, path = noGoPath) {
  const begin = Date.now();
  const r = spawnSync('bash', [script, ...args], {
    cwd: repoRoot,
    encoding: 'utf8',
    // stdin not a socket: bash would take itself for an ssh session's and read ~/.bashrc (PATH).
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 600_000,
    // HOME stays: Go's module and build caches are the user's, as they would be on that machine.
    env: { PATH: path, HOME: process.env.HOME ?? '', MERIDIAN_CACHE: cache, ...(process.env.GOPROXY ? { GOPROXY: process.env.GOPROXY } : {}), ...extraEnv },
  });
  return { code: r.status, out: r.stdout, err: r.stderr, seconds: (Date.now() - begin) / 1000 };
}

beforeAll(() => {
  cache = mkdtempSync(join(tmpdir(), 'meridian-go-cache-'));
  // The PATH without every directory that has a `go`.
  noGoPath = (process.env.PATH ?? '')
    .split(':')
    .filter((d) => d && !existsSync(join(d, 'go')))
    .join(':');
  expect(spawnSync('bash', ['-c', 'command -v go'], { env: { PATH: noGoPath }, stdio: 'ignore' }).status, 'go is still on the PATH').not.toBe(0);
});
afterAll(() => {
  if (cache) rmSync(cache, { recursive: true, force: true });
  if (timings.length > 0) console.log(`install.sh with go hidden:\n  ${timings.join('\n  ')}`);
});

describe('install.sh where Go is missing', () => {
  it('refuses a toolchain whose hash is not the one in go.sum and leaves nothing behind', () => {
    const r = run('deploy/local/install.sh', ['go'], { GO_TOOLCHAIN_H1_AMD64: 'h1:not-the-hash=', GO_TOOLCHAIN_H1_ARM64: 'h1:not-the-hash=' });
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/hash h1:\S+ is not go\.sum's h1:not-the-hash=/);
    expect(readdirSync(cache).filter((f) => f.startsWith('go-'))).toEqual([]);
  });

  it('installs the Go toolchain from the Go module proxy into the cache, saying what and how long', () => {
    const r = run('deploy/local/install.sh', ['go']);
    expect(r.code, r.err).toBe(0);
    timings.push(`toolchain download, unpack and check: ${r.seconds.toFixed(1)} s`);
    expect(r.err).toMatch(
      new RegExp(
        `installing Go ${goVersion.replaceAll('.', '\\.')} \\(no go on PATH\\): golang\\.org/toolchain@v0\\.0\\.1-go\\S+ from the Go module proxy, 76 MB.*\\(about .*once\\)`,
      ),
    );
    const goHome = join(cache, `go-${goVersion}`);
    expect(readdirSync(cache).filter((f) => f.startsWith('go-'))).toEqual([`go-${goVersion}`]);
    const version = spawnSync(join(goHome, 'bin/go'), ['version'], { encoding: 'utf8', env: { PATH: noGoPath, HOME: process.env.HOME ?? '' } });
    expect(version.stdout).toMatch(new RegExp(`^go version go${goVersion.replaceAll('.', '\\.')} linux/`));
    // Installed once: a second call finds it and says nothing.
    const again = run('deploy/local/install.sh', ['go']);
    expect(again.code).toBe(0);
    expect(again.err).toBe('');
  });

  it("builds a Go program with go install where go is missing, and where the machine's go is too old", () => {
    // A `go` that says it is 1.19 (Debian's golang): too old, so the cache's toolchain is used.
    const oldGoDir = join(cache, 'old-go');
    mkdirSync(oldGoDir);
    writeFileSync(
      join(oldGoDir, 'go'),
      '#!/bin/sh\nif [ "$1 $2" = "env GOVERSION" ]; then echo go1.19.8; exit 0; fi\necho "go version go1.19.8 linux/amd64"; exit 1\n',
    );
    chmodSync(join(oldGoDir, 'go'), 0o755);
    for (const [label, path] of [
      ['no go', noGoPath],
      ['go 1.19', `${oldGoDir}:${noGoPath}`],
    ] as const) {
      const bin = join(cache, label.replace(' ', '-'), 'bin/hello');
      // go_install, the function the MinIO and helm steps use, called on its own (install.sh sourced).
      const r = run('-c', [`source deploy/local/install.sh && with_cache_lock go_install "$1" "${HELLO}" "a small program" "seconds"`, '_', bin], {}, path);
      expect(r.code, `${label}: ${r.err}`).toBe(0);
      timings.push(`go install of golang.org/x/example/hello (${label} on PATH): ${r.seconds.toFixed(1)} s`);
      expect(r.err).toMatch(/building a small program with go install golang\.org\/x\/example\/hello@\S+ \(seconds, once\)/);
      expect(spawnSync(bin, [], { encoding: 'utf8' }).stdout.trim()).toBe('Hello, world!');
      // Built by the cache's toolchain (the build records its Go version).
      const built = spawnSync(join(cache, `go-${goVersion}`, 'bin/go'), ['version', bin], {
        encoding: 'utf8',
        env: { PATH: noGoPath, HOME: process.env.HOME ?? '' },
      });
      expect(built.stdout.trim()).toBe(`${bin}: go${goVersion}`);
    }
  });
});
