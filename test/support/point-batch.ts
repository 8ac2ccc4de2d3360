import type { PointBatch } from '@meridian/domain';

/** A PointBatch of one metric, its points given as [timestamp, value] pairs. */
export const pointBatch = (task_id: string, metric_name: string, updated_at: number, points: Array<[number, number]>): PointBatch => ({
  type: 'PointBatch',
  task_id,
  metric_name,
  updated_at,
  timestamps: points.map(([ts]) => ts),
  values: points.map(([, v]) => v),
});
