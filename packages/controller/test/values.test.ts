import { describe, expect, it } from '@jest/globals';
import { formatBindAddress, parseBindAddress, parseDuration } from '../src/index.js';

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['500ms', 500],
    ['15s', 15_000],
    ['10m', 600_000],
    ['1h30m', 5_400_000],
    ['2.5s', 2500],
    ['0.1s', 100],
    ['1h0m0s', 3_600_000],
    ['90s', 90_000],
    ['90d', 7_776_000_000],
    ['1d12h', 129_600_000],
  ])('reads %s as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '10', 'm', '10 m', '-5s', '1w', '1.5ms', '10m junk', 's10', '1e3s'])('rejects %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});

describe('parseBindAddress', () => {
  it.each([
    [':8080', { host: undefined, port: 8080 }],
    ['127.0.0.1:0', { host: '127.0.0.1', port: 0 }],
    ['[::1]:9443', { host: '::1', port: 9443 }],
    ['localhost:8081', { host: 'localhost', port: 8081 }],
  ])('reads %s', (text, expected) => {
    expect(parseBindAddress(text)).toEqual(expected);
    expect(formatBindAddress(expected)).toBe(text);
  });

  it('reads 0 as disabled', () => {
    expect(parseBindAddress('0')).toBeNull();
  });

  it.each(['8080', ':', ':65536', '[::1:8080', '[nothex]:80', '::1:8080', 'a b:80', 'host:-1'])('rejects %j', (text) => {
    expect(parseBindAddress(text)).toBeUndefined();
  });
});
