/**
 * The one classifier of failures: may waiting (a retry, a redelivery) cure this one?
 *
 * An error says so itself with `retriable` (kafkajs' errors do, as does UndecodableEventError),
 * and the errors it wraps count too: kafkajs gives up on retries it exhausted by wrapping the
 * last retriable error in a non-retriable one, and some admin calls (fetchTopicOffsets on
 * NOT_LEADER_FOR_PARTITION) give up at once on an answer that only means "not yet".
 */

/**
 * Kafka's answers that mean "not yet" on a fresh or busy cluster: partitions still electing a
 * leader or moved to another broker, group coordinators loading, a topic created a moment ago
 * that a broker does not know yet.
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

/** Codes of a network or storage (S3/MinIO) outage: the service is there again later. */
export const OUTAGE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'SlowDown',
  'InternalError',
  'ServiceUnavailable',
  'XMinioServerNotInitialized',
]);

/** Errors of the program or its configuration: no wait cures them. */
const PROGRAM_ERRORS = new Set(['TypeError', 'RangeError', 'SyntaxError', 'ReferenceError', 'ConfigError']);

type ErrorLike = { name?: unknown; type?: unknown; code?: unknown; retriable?: unknown; cause?: unknown; originalError?: unknown; errors?: unknown };

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

/**
 * The Kafka adapter's own errors (libs/kafka/src/transactional.ts): a transaction cut short
 * by Kafka, after which its producer was replaced. They say `retriable: true`.
 */
const KAFKA_ADAPTER_ERRORS = new Set(['TransactionInterrupted', 'TransactionOutcomeUnknown', 'ProducerFenced']);

// kafkajs is CommonJS and its error classes are not importable by name from ESM: the shape tells.
const isKafka = (e: ErrorLike) => typeof e.name === 'string' && (e.name.startsWith('KafkaJS') || KAFKA_ADAPTER_ERRORS.has(e.name));
const kafkaTransient = (e: ErrorLike) => isKafka(e) && (e.retriable === true || KAFKA_NOT_YET.has(String(e.type)));

/**
 * transient: a Kafka error that is or wraps a retriable one, an outage code, or an error that
 * says `retriable: true`; final: an error that says `retriable: false` (a Kafka refusal such as
 * an authorization failure, an undecodable event) or an error of the program; unknown: the rest.
 */
export type FailureKind = 'transient' | 'final' | 'unknown';

export function classify(error: unknown): FailureKind {
  const chain = causes(error);
  if (chain.some((e) => kafkaTransient(e) || OUTAGE_CODES.has(String(e.code)) || (!isKafka(e) && e.retriable === true))) return 'transient';
  if (chain.some((e) => e.retriable === false || PROGRAM_ERRORS.has(String(e.name)))) return 'final';
  return 'unknown';
}

/**
 * Whether a failure may pass if waited out, where giving up is worse than waiting (a process
 * starting, a projector that owns its partitions): all but the final ones, so a dependency
 * unreachable or still starting (an error of unknown kind) is waited out.
 */
export function waitingMayCure(error: unknown): boolean {
  return classify(error) !== 'final';
}

/** Kafka's own transient failure, which a redelivery of the command cures (a consumer rethrows it). */
export function isKafkaTransient(error: unknown): boolean {
  return causes(error).some(kafkaTransient);
}

/**
 * What a worker does with a failed run of a command (an upload, a file definition), the one rule
 * for every handler:
 * - redeliver: Kafka's own transient trouble, or a transaction it cut short. The outcome cannot be
 *   written to the log now; the command goes back to the consumer and runs again once it has
 *   re-read the tasks log (never a blind second run).
 * - retry: other trouble waiting may cure (storage or network, or of unknown kind), retried within
 *   the run, with backoff, a bounded number of times (MERIDIAN_UPLOAD_ATTEMPTS); the task fails after.
 * - fail: final (an error of the program, a refusal): the task fails at once.
 */
export type CommandFailure = 'redeliver' | 'retry' | 'fail';

export function commandFailure(error: unknown): CommandFailure {
  if (isKafkaTransient(error)) return 'redeliver';
  return classify(error) === 'final' ? 'fail' : 'retry';
}
