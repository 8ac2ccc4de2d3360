import { pino, type Logger } from 'pino';

export type { Logger };

export interface LoggerOptions {
  readonly name: string;
  readonly level: string;
  /** One human-readable line per entry instead of JSON (for `make run` in a terminal). */
  readonly pretty?: boolean;
  /** Where JSON lines go: stdout (services) or stderr (the CLI, whose stdout is its output). */
  readonly stream?: 'stdout' | 'stderr';
  /** Takes the JSON lines instead of a stream (tests read what a process logged). */
  readonly destination?: { write(line: string): void };
}

/**
 * Secrets never reach the logs: request headers that carry credentials and any field
 * named like a key or password are censored wherever they appear.
 */
const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  '*.api_key',
  '*.apiKey',
  '*.password',
  '*.secretKey',
  'api_key',
];

export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      name: options.name,
      level: options.level,
      redact: { paths: redactPaths, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination ?? (options.pretty ? prettyStream(options.name) : pino.destination({ dest: options.stream === 'stderr' ? 2 : 1, sync: true })),
  );
}

/** A tiny dependency-free pretty printer: `HH:MM:SS level name msg {extra}`. */
function prettyStream(name: string): { write(line: string): void } {
  return {
    write(line: string) {
      try {
        const { time, level, msg, name: _n, pid: _p, hostname: _h, ...rest } = JSON.parse(line) as Record<string, unknown>;
        const extra = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : '';
        process.stdout.write(`${String(time).slice(11, 19)} ${String(level).padEnd(5)} ${name}: ${String(msg ?? '')}${extra}\n`);
      } catch {
        process.stdout.write(line);
      }
    },
  };
}
