import { compileLimits, SeriesNameCache } from '@meridian/protocols';
import type { ApiParts } from '../api-parts.ts';
import type { PushPath } from '../uploads/push-path.ts';
import type { PushDeps } from '../uploads/push-submit.ts';
import type { TelemetryDeps } from './routes.ts';

export function telemetryDeps({ settings, submit, slots, bodies }: ApiParts, push: PushDeps, path: PushPath): TelemetryDeps {
  return {
    submit,
    push,
    limits: compileLimits({
      maxBytes: settings.MERIDIAN_PROTOCOL_MAX_BYTES,
      maxSeries: settings.MERIDIAN_PROTOCOL_MAX_SERIES,
      maxSamples: settings.MERIDIAN_PROTOCOL_MAX_SAMPLES,
    }),
    names: settings.MERIDIAN_PROTOCOL_NAME_CACHE_ENTRIES > 0 ? new SeriesNameCache(settings.MERIDIAN_PROTOCOL_NAME_CACHE_ENTRIES) : undefined,
    maxBodyBytes: settings.MERIDIAN_PUSH_MAX_BYTES,
    pointsCodec: path.pointsCodec,
    inFlight: slots.uploads,
    bodies,
  };
}
