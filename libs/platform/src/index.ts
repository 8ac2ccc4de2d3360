export { createAdapters, createPlatform, foldContext, sharedServices, type Adapters, type Platform, type PlatformOptions } from './platform.ts';
export type { FoldContext, FoldLimits } from './fold-context.ts';
export { FoldedTopic, type FoldOptions, type FoldSnapshots, type FoldStart } from './folded-topic.ts';
export { AccountsStore } from './accounts-store.ts';
export { TasksStore } from './tasks-store.ts';
export { TaskEndWaiters } from './task-end-waiters.ts';
export { untilDone, type UntilDoneOptions } from './until-done.ts';
export { runConsumer } from './run-consumer.ts';
export { checkReadiness, publicChecks, type Probe, type ProbeResult, type Readiness } from './readiness.ts';
