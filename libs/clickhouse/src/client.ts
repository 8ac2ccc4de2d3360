import { ClickHouseLogLevel, createClient, type ClickHouseClient, type Logger as ClientLogger } from '@clickhouse/client';
import type { Logger } from '@meridian/observability';

export type { ClickHouseClient };

export type ClickHouseOptions = {
  readonly url: string;
  readonly username: string;
  readonly password: string;
  readonly database: string;
  /**
   * The other servers of a cluster (CLICKHOUSE_URLS), tried in order by the read path
   * (download/http.ts) when `url` cannot be reached; writes and migrations use `url` alone.
   */
  readonly fallbackUrls?: readonly string[];
  /** Longest one read-model query may take (MERIDIAN_READ_MODEL_QUERY_TIMEOUT_MS); its default when absent. */
  readonly readModelQueryTimeoutMs?: number;
  /** Where the client's own log lines go; silent when absent. */
  readonly logger?: Logger;
};

/**
 * The client's log lines into pino. Its errors are also thrown to the caller, which
 * decides how loud they are, so they are logged here at debug only.
 */
function clientLoggerClass(logger: Logger): new () => ClientLogger {
  const log = logger.child({ component: 'clickhouse-client' });
  return class {
    trace(p: { message: string }) {
      log.trace(p.message);
    }
    debug(p: { message: string }) {
      log.debug(p.message);
    }
    info(p: { message: string }) {
      log.info(p.message);
    }
    warn(p: { message: string; err?: Error }) {
      log.warn({ err: p.err }, p.message);
    }
    error(p: { message: string; err: Error }) {
      log.debug({ err: p.err }, p.message);
    }
  };
}

/**
 * A client bound to Meridian's database. Settings are limited to what ClickHouse 18.16
 * (our local and CI server) understands, so the same code runs on current releases.
 */
export function createClickHouse(options: ClickHouseOptions, database: string | null = options.database): ClickHouseClient {
  return createClient({
    url: options.url,
    username: options.username,
    password: options.password,
    ...(database ? { database } : {}),
    log: options.logger ? { LoggerClass: clientLoggerClass(options.logger), level: ClickHouseLogLevel.WARN } : { level: ClickHouseLogLevel.OFF },
    request_timeout: 300_000,
    compression: { request: false, response: false },
    max_open_connections: 16,
    clickhouse_settings: {
      // Keeps long queries' connections alive through idle-timeout proxies (understood by 18.16 too).
      send_progress_in_http_headers: 1,
      http_headers_progress_interval_ms: '10000',
      // JSON answers quote 64-bit integers on every version (18.16's default; 0 from 25.8), so no
      // reader meets a number a JS number cannot hold. Every version from 18.16 on knows the name.
      output_format_json_quote_64bit_integers: 1,
    },
  });
}

export async function ensureDatabase(options: ClickHouseOptions): Promise<void> {
  const admin = createClickHouse(options, null);
  try {
    // The name is validated as an identifier by the settings schema; DDL cannot take it as data.
    await admin.command({ query: `CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(options.database)}` });
  } finally {
    await admin.close();
  }
}

/** Back-quotes an identifier that has already been validated as one. */
export function quoteIdentifier(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`not an identifier: ${name}`);
  return `\`${name}\``;
}

export async function pingClickHouse(client: ClickHouseClient): Promise<void> {
  const result = await client.ping();
  if (!result.success) throw result.error;
}
