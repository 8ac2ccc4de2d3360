import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where the user commands find the api and the key they call it with. */
export type Connection = { readonly url: string; readonly apiKey: string };

type Partial_ = { url?: string | undefined; api_key?: string | undefined };

/**
 * The config file: $XDG_CONFIG_HOME/meridian/config.json, else ~/.config/meridian/config.json
 * (the XDG base directory default), as `{"url": "...", "api_key": "..."}`.
 */
export function configFilePath(env: Readonly<Record<string, string | undefined>>): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(env.HOME || homedir(), '.config');
  return join(base, 'meridian', 'config.json');
}

async function readConfigFile(path: string): Promise<Partial_> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path}: not JSON (${(error as Error).message})`);
  }
  const { url, api_key } = (parsed ?? {}) as Record<string, unknown>;
  if ((url !== undefined && typeof url !== 'string') || (api_key !== undefined && typeof api_key !== 'string')) {
    throw new Error(`${path}: url and api_key must be strings`);
  }
  return { url, api_key };
}

/** Each value from the first that has it: flags, then the environment, then the config file. */
export function pickConnection(flags: Partial_, env: Partial_, file: Partial_, filePath: string): Connection {
  const url = flags.url || env.url || file.url;
  const apiKey = flags.api_key || env.api_key || file.api_key;
  if (!url) throw new ConnectionError(`no api address: pass --url, set MERIDIAN_URL or put "url" in ${filePath}`);
  if (!apiKey) throw new ConnectionError(`no API key: pass --api-key, set MERIDIAN_API_KEY or put "api_key" in ${filePath}`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConnectionError(`the api address is not a URL: ${url}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ConnectionError(`the api address must be http(s): ${url}`);
  return { url: url.replace(/\/+$/, ''), apiKey };
}

export class ConnectionError extends Error {}

/** Resolves the connection: flags > MERIDIAN_URL / MERIDIAN_API_KEY > the config file. */
export async function resolveConnection(flags: Partial_, env: Readonly<Record<string, string | undefined>>): Promise<Connection> {
  const path = configFilePath(env);
  const fromEnv = { url: env.MERIDIAN_URL, api_key: env.MERIDIAN_API_KEY };
  // The file is read only when flags and environment leave something open.
  const needFile = !(flags.url || fromEnv.url) || !(flags.api_key || fromEnv.api_key);
  return pickConnection(flags, fromEnv, needFile ? await readConfigFile(path) : {}, path);
}
