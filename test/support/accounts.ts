import type { Settings } from '@meridian/config';
import { call } from './api.ts';
import { meridian } from './cli.ts';

/** Creates an admin through the CLI (as an operator would) and returns its key. */
export async function bootstrapAdmin(settings: Settings, name = 'root'): Promise<string> {
  const result = await meridian(settings, ['users', 'add', name, '--admin', '--json']);
  if (result.code !== 0) throw new Error(`meridian users add failed: ${result.stderr}`);
  return (JSON.parse(result.stdout) as { api_key: string }).api_key;
}

/** Creates a user with the given metric rules through the api; returns its key. */
export async function createUser(
  apiUrl: string,
  adminKey: string,
  name: string,
  metrics: Array<{ match: 'exact' | 'prefix'; value: string; access: 'r' | 'rw' }>,
): Promise<string> {
  const created = await call(`${apiUrl}/api/v1/users`, adminKey, { method: 'POST', body: { user_name: name } });
  if (created.status !== 201) throw new Error(`create user ${name}: ${created.status} ${created.text}`);
  const granted = await call(`${apiUrl}/api/v1/users/${name}/entitlements`, adminKey, { method: 'PUT', body: { metrics } });
  if (granted.status !== 200) throw new Error(`entitlements ${name}: ${granted.status} ${granted.text}`);
  return created.json.api_key as string;
}
