import type { Settings } from '@meridian/config';
import type { TaskEvent } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import type { AccountsStore, TasksStore } from '@meridian/folds';
import type { ApiServices } from './api-services.ts';
import type { BodyBudget } from './http/body-budget.ts';
import type { CursorSeal } from './http/cursor-seal.ts';
import type { PerUserSlots } from './http/per-user-slots.ts';
import type { ApiMetrics } from './observability/metrics.ts';
import type { SubmitDeps } from './uploads/push-submit.ts';

/**
 * What several slices of the api share, made once by buildApi: each slice builds its routes'
 * dependencies from these (its own deps.ts), so the composition root only wires.
 */
export type ApiParts = {
  readonly services: ApiServices;
  readonly settings: Settings;
  readonly accounts: AccountsStore;
  readonly tasks: TasksStore;
  readonly taskCodec: EventCodec<TaskEvent>;
  readonly cursors: CursorSeal;
  /** Per instance: what this process is receiving or streaming for each user right now. */
  readonly slots: { readonly uploads: PerUserSlots; readonly downloads: PerUserSlots; readonly taskWaits: PerUserSlots };
  /** Per instance, over every user: the bytes of bodies held whole in memory (JSON uploads, pushes). */
  readonly bodies: BodyBudget;
  readonly metrics: ApiMetrics;
  /** The points and tasks topics' partition counts, read once (topic-partitions.ts). */
  readonly partitions: () => Promise<{ readonly points: number; readonly tasks: number }>;
  /** Writing a task-starting command and finding its task. */
  readonly submit: SubmitDeps;
  /**
   * This instance's name (MERIDIAN_API_INSTANCE, or the host and a random suffix): the transactional
   * writers' ids derive from it, so a restart under the same name fences what a dead predecessor left open.
   */
  readonly instance: string;
};
