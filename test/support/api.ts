import { buildApi, httpServerOptions, type Api } from '@meridian/api';
import type { Settings } from '@meridian/config';
import { createLogger } from '@meridian/observability';
import { createPlatform, type Platform } from './platform.ts';
import { serve, type Served } from './http.ts';

/** An api instance in this test process, on an ephemeral port, following the run's logs; `logs` holds what it logged. */
export type RunningApi = {
  readonly url: string;
  readonly api: Api;
  readonly platform: Platform;
  logs(): readonly Record<string, unknown>[];
  close(): Promise<void>;
};

export async function startApi(settings: Settings): Promise<RunningApi> {
  const lines: string[] = [];
  const destination = {
    write: (line: string) => {
      lines.push(line);
    },
  };
  const platform = createPlatform(settings, createLogger({ name: 'api', level: settings.LOG_LEVEL, destination }), 'api');
  await platform.prepare();
  const api = await buildApi(platform);
  await api.start();
  const served: Served = await serve(api.app, httpServerOptions(settings));
  return {
    url: served.url,
    api,
    platform,
    logs: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    async close() {
      await served.close();
      await api.stop();
      await platform.close();
    },
  };
}

/** fetch with a bearer key and JSON in and out. */
export async function call(url: string, key: string | null, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: {
      ...(key ? { Authorization: `Bearer ${key}` } : {}),
      ...(init.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      ...init.headers,
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  let json: any = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, text, json };
}
