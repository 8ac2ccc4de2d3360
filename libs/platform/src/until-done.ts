import type { Logger } from '@meridian/observability';

export type UntilDoneOptions = {
  /** Whether a failure may pass if waited out; one that may not is thrown at once. Default: retriableAtStart. */
  readonly retriable?: (error: unknown) => boolean;
  /** Most attempts before the last failure is thrown (a CLI gives up; a server waits forever). Default: no limit. */
  readonly attempts?: number;
};

/**
 * Runs `attempt` until it succeeds, backing off up to 5 s and logging each failure. For
 * start-up work a process must not die of (a dependency still starting, topics another
 * process is creating at the same moment, a fresh Kafka still electing its leaders); a
 * failure that waiting cannot cure (see retriableAtStart) is thrown at once. `attempt` must be
 * safe to run again after it failed.
 */
export async function untilDone<T>(what: string, attempt: () => Promise<T>, logger: Logger, options: UntilDoneOptions = {}): Promise<T> {
  const retriable = options.retriable ?? retriableAtStart;
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      if (!retriable(error) || n + 1 >= (options.attempts ?? Number.POSITIVE_INFINITY)) throw error;
      const delay = Math.min(250 * 2 ** n, 5000);
      // A passing outage is a warning; one that lasts (a wrong endpoint or credentials) an error.
      logger[n < 10 ? 'warn' : 'error']({ err: error, attempt: n + 1, retry_in_ms: delay }, `${what} failed; retrying`);
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/**
 * Kafka's answers that mean "not yet" on a fresh or busy cluster: partitions still electing a
 * leader or moved to another broker, group coordinators loading, a topic created a moment ago
 * that a broker does not know yet. kafkajs marks them retriable, yet some admin calls
 * (fetchTopicOffsets on NOT_LEADER_FOR_PARTITION) give up at once, and retries it exhausted
 * come back wrapped as non-retriable: the cause chain is what counts.
 */
export const KAFKA_NOT_YET = new Set([
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_FOR_PARTITION',
  'NOT_LEADER_OR_FOLLOWER',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'GROUP_COORDINATOR_NOT_AVAILABLE',
  'GROUP_LOAD_IN_PROGRESS',
  'NOT_COORDINATOR_FOR_GROUP',
  'REQUEST_TIMED_OUT',
  'REBALANCE_IN_PROGRESS',
]);

/** Errors of the program or its configuration: no wait cures them. */
const PROGRAM_ERRORS = new Set(['TypeError', 'RangeError', 'SyntaxError', 'ReferenceError', 'ConfigError']);

type ErrorLike = { name?: unknown; type?: unknown; retriable?: unknown; cause?: unknown; originalError?: unknown; errors?: unknown };

/** The error and every error it wraps (cause, kafkajs' originalError, an AggregateError's errors). */
function causes(error: unknown, out: ErrorLike[] = [], depth = 0): ErrorLike[] {
  if (error === null || typeof error !== 'object' || depth > 8 || out.includes(error)) return out;
  const e = error as ErrorLike;
  out.push(e);
  causes(e.cause, out, depth + 1);
  causes(e.originalError, out, depth + 1);
  if (Array.isArray(e.errors)) for (const inner of e.errors) causes(inner, out, depth + 1);
  return out;
}

const isKafka = (e: ErrorLike) => typeof e.name === 'string' && e.name.startsWith('KafkaJS');

/**
 * Whether a failure at start may pass if waited out. Yes for any Kafka error that is, or wraps,
 * a retriable one (KAFKA_NOT_YET, lost connections, timeouts) and for errors of unknown kind
 * (a dependency unreachable or still starting); no for a Kafka refusal that is final
 * (authorization, authentication, an invalid request) and for errors of the program itself.
 */
export function retriableAtStart(error: unknown): boolean {
  const chain = causes(error);
  if (chain.some((e) => isKafka(e) && (e.retriable === true || KAFKA_NOT_YET.has(String(e.type))))) return true;
  if (chain.some((e) => (isKafka(e) && e.retriable === false) || PROGRAM_ERRORS.has(String(e.name)))) return false;
  return true;
}
