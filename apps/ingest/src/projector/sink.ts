// The exactly-once points sink lives in @meridian/replay (shared with rebuilds); re-exported for the projector.
export { createPointsSink, type PointsSink } from '@meridian/replay/projection';
