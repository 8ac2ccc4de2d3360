import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { INGEST_NODE_FLAGS } from '../../apps/ingest/src/node-flags.ts';

const launcher = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('every launcher starts the ingest worker with INGEST_NODE_FLAGS', () => {
  const shell = `node ${INGEST_NODE_FLAGS.join(' ')} apps/ingest/src/main.ts`;

  it('has flags to pass', () => {
    expect(INGEST_NODE_FLAGS.length).toBeGreaterThan(0);
  });

  it.each(['deploy/local/run.sh', 'deploy/cluster/cluster.sh'])('%s', (path) => {
    expect(launcher(path)).toContain(shell);
    expect(launcher(path)).not.toMatch(/node apps\/ingest\/src\/main\.ts/);
  });

  it('docker-compose.yml and the helm chart', () => {
    const argv = ['node', ...INGEST_NODE_FLAGS, 'apps/ingest/src/main.ts'];
    expect(launcher('deploy/compose/docker-compose.yml')).toContain(`command: ${JSON.stringify(argv).replaceAll(',', ', ')}`);
    expect(launcher('deploy/helm/meridian/templates/ingest.yaml')).toContain(`(list ${argv.map((a) => JSON.stringify(a)).join(' ')})`);
  });
});
