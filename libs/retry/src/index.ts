export { retry, type RetryOptions, type RetryPolicy } from './retry.ts';
export { FAST_RETRY, RETRY_POLICIES } from './policies.ts';
export { classify, commandFailure, isKafkaTransient, waitingMayCure, KAFKA_NOT_YET, OUTAGE_CODES, type CommandFailure, type FailureKind } from './transient.ts';
