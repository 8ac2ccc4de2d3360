// The points projection's rows live in @meridian/replay (shared with rebuilds); re-exported for the projector.
export { batchProblem, encodePointsBlock, insertPointsSql, INSERT_POINTS_SQL, POINT_COLUMNS, segmentRows, type PointRow, type Segment } from '@meridian/replay/projection';
