import { describe, expect, it } from 'vitest';
import { ConfigError, loadSettings } from '@meridian/config';
import { rollupSealOptions } from './options.ts';

describe('the seal pass options', () => {
  it('seal the 1h rollup every 5 minutes by default; 1m only when named; none when off', () => {
    expect(rollupSealOptions(loadSettings({}))).toEqual({ intervalMs: 300_000, maxBuckets: 100_000, resolutions: ['1h'] });
    expect(rollupSealOptions(loadSettings({ MERIDIAN_ROLLUP_SEAL_RESOLUTIONS: '1h,1m' })).resolutions).toEqual(['1h', '1m']);
    expect(rollupSealOptions(loadSettings({ MERIDIAN_ROLLUP_SEAL_RESOLUTIONS: 'off' })).resolutions).toEqual([]);
    for (const bad of ['1m,1h,1d', 'all', '1d']) expect(() => loadSettings({ MERIDIAN_ROLLUP_SEAL_RESOLUTIONS: bad }), bad).toThrow(ConfigError);
  });
});
