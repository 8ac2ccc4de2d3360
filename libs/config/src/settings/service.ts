import { z } from 'zod';
import { port, positiveInt, bool } from './schemas.ts';

/** Where the api and the ingest worker listen, how they log, and what names them. */
export const serviceSettings = {
  MERIDIAN_API_HOST: { schema: z.string().min(1), default: '127.0.0.1', doc: 'Address the api listens on.' },
  MERIDIAN_API_PORT: { schema: port, default: '8088', doc: 'Port the api listens on.' },
  MERIDIAN_API_INSTANCE: {
    schema: z.string().regex(/^[A-Za-z0-9._-]*$/, 'letters, digits, . _ -'),
    default: '',
    doc: "This api instance's name, unique among the live instances and kept across its restarts (a StatefulSet pod's name, a service unit's): its push writer's Kafka transactional id derives from it, so a restarted instance ends at once a transaction its predecessor left open. Empty: the host name and a random suffix, and a dead instance's open transaction ends at MERIDIAN_PUSH_TRANSACTION_TIMEOUT_MS. Two live instances must never share a name: they would fence each other's pushes.",
  },
  LOG_LEVEL: {
    schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    default: 'info',
    doc: 'pino log level.',
  },
  MERIDIAN_DEV_LOGS: { schema: bool, default: 'false', doc: 'Human-readable logs (make run) instead of JSON lines.' },
  MERIDIAN_READY_TIMEOUT_MS: {
    schema: positiveInt,
    default: '2000',
    doc: 'How long /readyz waits for each dependency before calling it down.',
  },
  MERIDIAN_ADMIN_HOST: {
    schema: z.string().min(1),
    default: '127.0.0.1',
    doc: 'Address of the admin listener (used only when MERIDIAN_ADMIN_PORT is set).',
  },
  MERIDIAN_ADMIN_PORT: {
    schema: z.literal('').or(port),
    default: '',
    doc: 'Port of the admin listener serving /metrics and the detailed /readyz; when set, the public listener answers /metrics with 404. Unset: no admin listener, /metrics stays on the public port.',
  },
  MERIDIAN_INGEST_HEALTH_HOST: {
    schema: z.string().min(1),
    default: '127.0.0.1',
    doc: "Address of the ingest worker's probe listener (/healthz, /readyz; used only when MERIDIAN_INGEST_HEALTH_PORT is set). In a pod: 0.0.0.0, so the kubelet reaches it.",
  },
  MERIDIAN_INGEST_HEALTH_PORT: {
    schema: z.literal('').or(port),
    default: '',
    doc: "Port of the ingest worker's probe listener: /healthz (no consumer failed for good) and /readyz (Kafka, ClickHouse, MinIO answer and its consumers (commands, points projector, tasks projector, files projector) joined their groups). Unset: no listener (several workers on one machine need no ports); a consumer that fails for good ends the process either way.",
  },
  MERIDIAN_CURSOR_SECRET: {
    schema: z.string().refine((v) => v === '' || v.length >= 32, 'at least 32 characters (or empty: a random secret per process)'),
    default: '',
    doc: 'Secret (at least 32 characters; never logged) from which the key that encrypts and authenticates download and events cursors is derived (HKDF-SHA256, AES-256-GCM). Every api instance behind one address needs the same one. Empty: a random secret per process, with a warning at start; cursors then work only on the instance that issued them, until it restarts.',
  },
} as const;
