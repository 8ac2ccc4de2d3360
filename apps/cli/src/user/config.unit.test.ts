import { describe, expect, it } from 'vitest';
import { configFilePath, ConnectionError, pickConnection } from './config.ts';

describe('the connection', () => {
  const file = { url: 'http://file:1', api_key: 'file-key' };
  const env = { url: 'http://env:2', api_key: 'env-key' };

  it('takes each value from flags, else the environment, else the config file', () => {
    expect(pickConnection({}, {}, file, 'f')).toEqual({ url: 'http://file:1', apiKey: 'file-key' });
    expect(pickConnection({}, env, file, 'f')).toEqual({ url: 'http://env:2', apiKey: 'env-key' });
    expect(pickConnection({ api_key: 'flag-key' }, env, file, 'f')).toEqual({ url: 'http://env:2', apiKey: 'flag-key' });
    expect(pickConnection({ url: 'https://flag/' }, {}, file, 'f')).toEqual({ url: 'https://flag', apiKey: 'file-key' });
  });

  it('names every place a missing value can come from', () => {
    expect(() => pickConnection({}, {}, {}, '/c.json')).toThrow(/--url, set MERIDIAN_URL or put "url" in \/c.json/);
    expect(() => pickConnection({}, { url: 'http://x' }, {}, '/c.json')).toThrow(ConnectionError);
    expect(() => pickConnection({}, { url: 'ftp://x', api_key: 'k' }, {}, 'f')).toThrow(/http\(s\)/);
  });

  it('the config file is under XDG_CONFIG_HOME, else ~/.config', () => {
    expect(configFilePath({ XDG_CONFIG_HOME: '/x', HOME: '/h' })).toBe('/x/meridian/config.json');
    expect(configFilePath({ HOME: '/h' })).toBe('/h/.config/meridian/config.json');
    expect(configFilePath({ XDG_CONFIG_HOME: 'relative', HOME: '/h' })).toBe('/h/.config/meridian/config.json');
  });
});
