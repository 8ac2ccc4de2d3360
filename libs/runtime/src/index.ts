export { untilDone, type UntilDoneOptions } from './until-done.ts';
export { runConsumer } from './run-consumer.ts';
export { checkReadiness, publicChecks, type Probe, type ProbeResult, type Readiness } from './readiness.ts';
