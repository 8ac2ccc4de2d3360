import { describe, expect, it } from 'vitest';
import { decodeOtlpMetrics, decodeRemoteWriteBody } from '@meridian/protocols';
import { otlpGaugeBody, remoteWriteBody } from '../support/protocol-bodies.ts';

describe('the test bodies of the telemetry protocols', () => {
  it('a remote write body decodes to its series and samples', () => {
    const decoded = decodeRemoteWriteBody(
      remoteWriteBody([
        {
          labels: [
            ['__name__', 'fuzz_rw'],
            ['job', 'x'],
          ],
          samples: [
            [1_704_067_200_000, 1.5],
            [1_704_067_201_000, 2],
          ],
        },
      ]),
      '1.0',
    );
    expect(decoded.series.map((s) => [s.name, s.timestamps, s.values])).toEqual([['fuzz_rw{job="x"}', [1_704_067_200_000, 1_704_067_201_000], [1.5, 2]]]);
  });

  it('an OTLP gauge decodes the same from protobuf and from JSON', () => {
    for (const format of ['protobuf', 'json'] as const) {
      const decoded = decodeOtlpMetrics(otlpGaugeBody('fuzz_otlp', 'svc', 1_704_067_200_000, 3.25, format), format);
      expect(
        decoded.series.map((s) => [s.name, s.timestamps, s.values]),
        format,
      ).toEqual([['fuzz_otlp{job="svc"}', [1_704_067_200_000], [3.25]]]);
    }
  });
});
