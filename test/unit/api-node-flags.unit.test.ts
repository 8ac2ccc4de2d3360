import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { API_NODE_ENV, API_NODE_FLAGS } from '../../apps/api/src/node-flags.ts';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('the api is started with API_NODE_FLAGS everywhere', () => {
  it('deploy/local/run.sh', () => {
    expect(read('deploy/local/run.sh')).toContain(`node ${API_NODE_FLAGS.join(' ')} apps/api/src/main.ts`);
  });

  it('the Dockerfile and docker-compose.yml', () => {
    const argv = JSON.stringify(['node', ...API_NODE_FLAGS, 'apps/api/src/main.ts']).replaceAll(',', ', ');
    expect(read('deploy/compose/Dockerfile')).toContain(`CMD ${argv}`);
    expect(read('deploy/compose/docker-compose.yml')).toContain(`command: ${argv}`);
  });

  it('and with API_NODE_ENV: the shell launchers set it on the api, the image on every process', () => {
    const assignments = Object.entries(API_NODE_ENV).map(([k, v]) => `${k}=${v}`);
    expect(assignments.length).toBeGreaterThan(0);
    expect(read('deploy/local/run.sh')).toContain(`${assignments.join(' ')} node ${API_NODE_FLAGS.join(' ')} apps/api/src/main.ts`);
    expect(read('deploy/cluster/cluster.sh')).toMatch(new RegExp(`${assignments.join(' ')} \\\\\n\\s+node ${API_NODE_FLAGS.join(' ')} apps/api/src/main\\.ts`));
    for (const assignment of assignments) expect(read('deploy/compose/Dockerfile')).toContain(`ENV ${assignment}`);
  });

  it('no launcher starts the api without them', () => {
    for (const path of ['deploy/local/run.sh', 'deploy/compose/Dockerfile', 'deploy/compose/docker-compose.yml']) {
      expect(read(path)).not.toMatch(/"node", "apps\/api\/src\/main\.ts"|node apps\/api\/src\/main\.ts/);
    }
  });
});
