export { startProjector, type RunningProjector } from './projector.ts';
