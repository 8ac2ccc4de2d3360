export type { FoldContext, FoldLimits } from './fold-context.ts';
export { FoldedTopic, type FoldOptions, type FoldSnapshots, type FoldStart } from './folded-topic.ts';
export { AccountsStore } from './accounts-store.ts';
export { TasksStore } from './tasks-store.ts';
export { TaskEndWaiters } from './task-end-waiters.ts';
