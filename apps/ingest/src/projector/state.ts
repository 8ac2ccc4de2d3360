// The projector's pure state lives in @meridian/replay (shared with rebuilds); re-exported for the projector.
export { Projection, type Decision, type Seal } from '@meridian/replay/projection';
