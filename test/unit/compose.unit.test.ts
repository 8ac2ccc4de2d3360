import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadSettings } from '@meridian/config';

const dir = new URL('../../deploy/compose/', import.meta.url).pathname;
type Service = {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, unknown>;
  depends_on?: Record<string, unknown>;
};

describe('deploy/compose', () => {
  const compose = parse(readFileSync(`${dir}docker-compose.yml`, 'utf8'), { merge: true }) as {
    services: Record<string, Service>;
    volumes: Record<string, unknown>;
  };

  it('defines the three services and the two apps', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'clickhouse', 'ingest', 'kafka', 'minio']);
  });

  it('pins every third-party image to a version tag', () => {
    for (const name of ['kafka', 'clickhouse', 'minio']) {
      expect(compose.services[name]!.image, name).toMatch(/^[\w./-]+:[\w.-]+$/);
      expect(compose.services[name]!.image, name).not.toMatch(/:latest$/);
    }
  });

  it('builds the apps from a Dockerfile that exists and runs their entry points', () => {
    for (const name of ['api', 'ingest']) {
      const s = compose.services[name]!;
      expect(existsSync(new URL(`../../${s.build!.dockerfile}`, import.meta.url))).toBe(true);
      expect(existsSync(new URL(`../../${s.command!.at(-1)}`, import.meta.url))).toBe(true); // after node's flags
      expect(s.environment).toMatchObject({ KAFKA_BROKERS: 'kafka:9092', CLICKHOUSE_URL: 'http://clickhouse:8123', S3_ENDPOINT: 'http://minio:9000' });
      expect(Object.keys(s.depends_on!).sort()).toEqual(['clickhouse', 'kafka', 'minio']);
    }
  });

  it('gives the apps a cursor secret the settings accept, marked as an example to replace', () => {
    for (const name of ['api', 'ingest']) {
      const secret = String(compose.services[name]!.environment!.MERIDIAN_CURSOR_SECRET);
      expect(secret).toMatch(/^EXAMPLE-ONLY/);
      expect(loadSettings({ MERIDIAN_CURSOR_SECRET: secret }).MERIDIAN_CURSOR_SECRET).toBe(secret);
    }
  });

  it('declares every named volume it mounts', () => {
    for (const s of Object.values(compose.services)) {
      for (const v of (s as { volumes?: string[] }).volumes ?? []) expect(compose.volumes).toHaveProperty(v.split(':')[0]!);
    }
  });
});
