export { createLogger, type Logger, type LoggerOptions } from './logger.ts';
export { withDeadline, withTimeout } from './with-timeout.ts';
export { silenceKnownWarnings } from './silence-known-warnings.ts';
export { logUnhandledRejections, unhandledRejections } from './unhandled-rejections.ts';
